"""The PROXY protocol (HAProxy's doc/proxy-protocol.txt), v1 and v2, read without I/O.

A load balancer in TCP mode writes one header at the start of each connection it opens to us, naming the
client it accepted; the reader here takes the connection's first bytes and returns that header and the bytes
after it, which are the client's own (a TLS ClientHello, or the first Kafka frame). Pure: no trio, no sockets.
"""

from envelope.proxy_protocol.model import ProxyHeader, ProxyHeaderError, TlsInfo
from envelope.proxy_protocol.reader import NO_HEADER, HeaderReader, NoHeader

__all__ = ["NO_HEADER", "HeaderReader", "NoHeader", "ProxyHeader", "ProxyHeaderError", "TlsInfo"]
