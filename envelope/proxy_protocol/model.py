"""What a PROXY protocol header says, and the one error every malformed header raises."""

import ipaddress
from dataclasses import dataclass
from typing import Literal

from envelope.errors import ProtocolError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Command = Literal["PROXY", "LOCAL"]

# Commands (v2 low nibble of byte 13; v1 headers are always PROXY).
PROXY: Command = "PROXY"
LOCAL: Command = "LOCAL"


class ProxyHeaderError(ProtocolError):
    """The connection's first bytes are not a valid PROXY protocol header this listener accepts: close it."""


@dataclass(frozen=True, slots=True)
class TlsInfo:
    """PP2_TYPE_SSL: how the client reached the load balancer, when it terminated TLS."""

    client_bits: int
    """PP2_CLIENT_SSL (0x01), PP2_CLIENT_CERT_CONN (0x02), PP2_CLIENT_CERT_SESS (0x04)."""
    verify: int
    """0 when the client's certificate was verified (or, HAProxy 2.6, when none was sent)."""
    version: str | None = None
    """PP2_SUBTYPE_SSL_VERSION, e.g. TLSv1.3."""
    common_name: str | None = None
    """PP2_SUBTYPE_SSL_CN: the client certificate's subject CN."""

    @property
    def certificate_verified(self) -> bool:
        """A certificate was presented (on this connection or its session) and verified: only then does CN mean anything."""
        return bool(self.client_bits & (CLIENT_CERT_CONN | CLIENT_CERT_SESS)) and self.verify == 0


CLIENT_SSL = 0x01
CLIENT_CERT_CONN = 0x02
CLIENT_CERT_SESS = 0x04


@dataclass(frozen=True, slots=True)
class ProxyHeader:
    """One header. `source` is None when the header names no usable client (v1 UNKNOWN; v2 LOCAL, UNSPEC,
    UNIX or a datagram family): the connection is then served as the load balancer's own."""

    version: Literal[1, 2]
    command: Command
    source: tuple[IpAddress, int] | None
    destination: tuple[IpAddress, int] | None
    length: int
    """Bytes the header took on the wire."""
    authority: str | None = None
    """PP2_TYPE_AUTHORITY: the host name the client asked the load balancer for (TLS SNI)."""
    tls: TlsInfo | None = None
