"""Server-side SASL settings of one listener: enabled mechanisms, PLAIN users, SCRAM credentials."""

from dataclasses import dataclass, field

from proxy.net.sasl.credential_source import ScramCredentialSource
from proxy.net.sasl.credentials import DEFAULT_KEY as SCRAM_CREDENTIALS_KEY
from proxy.net.sasl.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parse_jaas
from proxy.net.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from proxy.properties import ConfigError, Properties

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


@dataclass(frozen=True)
class SaslSettings:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)
    scram: ScramCredentialSource | None = field(default=None, repr=False)


def parse_sasl(props: Properties, listener: str) -> SaslSettings:
    mechanisms_key = props.listener_key(listener, "sasl.enabled.mechanisms")
    configured = props.listener_value(listener, "sasl.enabled.mechanisms")
    # Kafka's default is GSSAPI, which this product does not serve: an unset key is an error below.
    text = configured or "GSSAPI"
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    for mechanism in mechanisms:
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                mechanisms_key,
                configured,
                f"mechanism {mechanism} is not supported (supported: {', '.join(SUPPORTED_MECHANISMS)}); Kafka's default is GSSAPI, so set it explicitly",
            )
    prefix = f"listener.name.{listener.lower()}"
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        jaas_key = f"{prefix}.plain.sasl.jaas.config"
        jaas_text = props.get(jaas_key)
        if jaas_text is None:
            raise ConfigError(jaas_key, None, f"listener {listener} enables PLAIN but has no JAAS configuration")
        entry = parse_jaas(jaas_key, jaas_text)
        if entry.module != PLAIN_LOGIN_MODULE:
            raise ConfigError(jaas_key, "[hidden]", f"expected {PLAIN_LOGIN_MODULE}, got {entry.module}")
        users = entry.users
    scram_enabled = [m for m in mechanisms if m in SCRAM_MECHANISMS]
    for mechanism in scram_enabled:
        # Accepted as in Kafka, where the server's ScramLoginModule carries no users: they live in the credentials file.
        jaas_key = f"{prefix}.{mechanism.lower()}.sasl.jaas.config"
        jaas_text = props.get(jaas_key)
        if jaas_text is not None and parse_jaas(jaas_key, jaas_text).module != SCRAM_LOGIN_MODULE:
            raise ConfigError(jaas_key, "[hidden]", f"expected {SCRAM_LOGIN_MODULE}")
    scram: ScramCredentialSource | None = None
    if scram_enabled:
        file_key = props.listener_key(listener, SCRAM_CREDENTIALS_KEY)
        path = props.listener_value(listener, SCRAM_CREDENTIALS_KEY)
        if not path:
            raise ConfigError(
                file_key,
                path,
                f"listener {listener} enables {', '.join(scram_enabled)} but names no credentials file (create one with envelope-proxy scram add-user)",
            )
        scram = ScramCredentialSource(path, file_key)
    return SaslSettings(mechanisms, users, scram)
