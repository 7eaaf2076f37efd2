"""Every SASL mechanism the proxy and the embedded controller serve, and the proxy logs in with: one line each.

A new mechanism is one module under proxy/net/sasl/ with its settings, server side and client
side (the contract is proxy/net/sasl/mechanisms.py; plain.py is the smallest example), plus one
line here.
"""

from collections.abc import Mapping

from proxy.net.sasl.gssapi_mechanism import GSSAPI
from proxy.net.sasl.mechanisms import Mechanism
from proxy.net.sasl.oauth.mechanism import OAUTHBEARER
from proxy.net.sasl.plain import PLAIN
from proxy.net.sasl.scram_mechanism import SCRAM

MECHANISMS: tuple[Mechanism, ...] = (
    PLAIN,
    SCRAM,
    OAUTHBEARER,
    GSSAPI,
)

BY_NAME: Mapping[str, Mechanism] = {name: mechanism for mechanism in MECHANISMS for name in mechanism.names}
"""Each mechanism name (SCRAM-SHA-256, ...) -> its mechanism."""
SUPPORTED_MECHANISMS = tuple(BY_NAME)

__all__ = ["BY_NAME", "MECHANISMS", "SUPPORTED_MECHANISMS"]
