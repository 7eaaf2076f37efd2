"""How the proxy logs in to the controller listener, read as a Kafka broker reads it.

`sasl.mechanism.controller.protocol` names the mechanism; its module (proxy/net/sasl/registry.py)
reads the rest, for PLAIN and SCRAM `listener.name.<controller listener>.<mechanism>.sasl.jaas.config`
with the username and password (PlainLoginModule or ScramLoginModule).
"""

from proxy.net.sasl.mechanisms import ClientLogin
from proxy.net.sasl.registry import BY_NAME, SUPPORTED_MECHANISMS
from proxy.properties import ConfigError, Properties

MECHANISM_KEY = "sasl.mechanism.controller.protocol"


def parse_upstream_login(props: Properties, listener: str, protocol: str) -> ClientLogin | None:
    """None for PLAINTEXT and SSL (the certificate, if any, is the TLS settings')."""
    if not protocol.startswith("SASL_"):
        return None
    mechanism = (props.get(MECHANISM_KEY) or "GSSAPI").upper()
    family = BY_NAME.get(mechanism)
    if family is None:
        raise ConfigError(
            MECHANISM_KEY,
            mechanism,
            f"mechanism {mechanism} is not supported for the proxy's own login (supported: {', '.join(SUPPORTED_MECHANISMS)})",
        )
    return family.client(props, listener, mechanism)
