"""How the proxy logs in to the controller listener, read as a Kafka broker reads it.

`sasl.mechanism.controller.protocol` names the mechanism and
`listener.name.<controller listener>.<mechanism>.sasl.jaas.config` carries the
username and password (PlainLoginModule or ScramLoginModule).
"""

from dataclasses import dataclass, field

from proxy.net.sasl.client import CLIENT_MECHANISMS
from proxy.net.sasl.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parse_jaas
from proxy.properties import ConfigError, Properties

MECHANISM_KEY = "sasl.mechanism.controller.protocol"


@dataclass(frozen=True)
class UpstreamLogin:
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def parse_upstream_login(props: Properties, listener: str, protocol: str) -> UpstreamLogin:
    if not protocol.startswith("SASL_"):
        return UpstreamLogin()
    mechanism = (props.get(MECHANISM_KEY) or "GSSAPI").upper()
    if mechanism not in CLIENT_MECHANISMS:
        raise ConfigError(
            MECHANISM_KEY,
            mechanism,
            f"mechanism {mechanism} is not supported for the proxy's own login (supported: {', '.join(CLIENT_MECHANISMS)}); Kafka's default is GSSAPI, so set it explicitly",
        )
    jaas_key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas = parse_jaas(jaas_key, props.require(jaas_key))
    module = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    if jaas.module != module:
        raise ConfigError(jaas_key, "[hidden]", f"expected {module}")
    username = jaas.options.get("username")
    password = jaas.options.get("password")
    if not username or password is None:
        raise ConfigError(jaas_key, "[hidden]", "the proxy's login needs username and password options")
    return UpstreamLogin(mechanism, username, password)
