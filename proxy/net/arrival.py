"""Who a new connection is and whether it may stay, decided before TLS and before any Kafka byte.

Without the PROXY protocol: the TCP peer, through the IP filter and the connection limits (admission.py).

With it (proxy/net/proxy_protocol.py), the trusted list gates the load balancer and the IP filter gates the client:

1. a TCP peer outside `proxy.protocol.trusted.cidrs` is closed at once, nothing read; with `optional` it is served
   as itself, admitted first, and closed if its first bytes are a header (only a trusted peer may name another);
2. from a trusted peer the header is read within `proxy.protocol.header.timeout.ms`; missing, malformed or
   truncated, the connection is closed;
3. the client the header names (or, for LOCAL, UNKNOWN and the like, the load balancer itself) then goes through
   the IP filter and the limits, exactly as a direct client would; a refusal names the client and the load balancer.
"""

from dataclasses import dataclass

import trio

from envelope.proxy_protocol import HeaderReader, NoHeader, ProxyHeaderError
from proxy.net.admission import Refusal, admit
from proxy.net.connection import Peer
from proxy.net.limits import ConnectionTracker
from proxy.net.proxied import client_peer, read_header, with_prefix
from proxy.net.proxy_protocol import ProxyProtocol
from proxy.net.refusals import PROXY_PROTOCOL_HEADER, PROXY_PROTOCOL_UNTRUSTED
from proxy.net.settings import ListenerConfig


@dataclass(frozen=True)
class Arrived:
    """Admitted, and counted by the tracker under `peer.host` until released."""

    peer: Peer
    stream: trio.abc.Stream


@dataclass(frozen=True)
class TurnedAway:
    """Refused; nothing is counted. `peer` is who the refusal names."""

    peer: Peer
    refusal: Refusal


async def arrive(stream: trio.SocketStream, listener: ListenerConfig, tracker: ConnectionTracker, tcp_peer: Peer) -> Arrived | TurnedAway:
    settings = listener.proxy_protocol
    if settings is None:
        return _admitted(listener, tracker, tcp_peer, stream)
    if not settings.trusts(tcp_peer.host):
        return await _untrusted(stream, listener, tracker, tcp_peer, settings)
    try:
        header, leftover = await read_header(stream, HeaderReader(settings.versions, optional=settings.optional), settings.header_timeout)
    except ProxyHeaderError as exc:
        return TurnedAway(tcp_peer, Refusal(PROXY_PROTOCOL_HEADER, f"{exc} (from {tcp_peer}, trusted by {settings.trusted_key})"))
    # Without a header (optional), the load balancer's own connection: served as the load balancer.
    peer = tcp_peer if isinstance(header, NoHeader) else client_peer(tcp_peer, header)
    return _admitted(listener, tracker, peer, with_prefix(stream, leftover))


async def _untrusted(
    stream: trio.SocketStream, listener: ListenerConfig, tracker: ConnectionTracker, tcp_peer: Peer, settings: ProxyProtocol
) -> Arrived | TurnedAway:
    untrusted = Refusal(PROXY_PROTOCOL_UNTRUSTED, f"{tcp_peer.host} is not in {settings.trusted_key}")
    if not settings.optional:
        return TurnedAway(tcp_peer, untrusted)  # closed before a byte is read
    # Served as itself, so admitted as itself first: a peer the filter or the limits refuse is not read at all.
    admitted = _admitted(listener, tracker, tcp_peer, stream)
    if isinstance(admitted, TurnedAway):
        return admitted
    try:
        first, leftover = await read_header(stream, HeaderReader(settings.versions, optional=True), settings.header_timeout)
    except ProxyHeaderError as exc:
        why = str(exc)  # it began like a header, or sent nothing in time
    else:
        if isinstance(first, NoHeader):
            return Arrived(tcp_peer, with_prefix(stream, leftover))
        why = "it sent a PROXY protocol header"
    tracker.release(listener.name, tcp_peer.host)
    return TurnedAway(tcp_peer, Refusal(PROXY_PROTOCOL_UNTRUSTED, f"{untrusted.detail}, and {why}"))


def _admitted(listener: ListenerConfig, tracker: ConnectionTracker, peer: Peer, stream: trio.abc.Stream) -> Arrived | TurnedAway:
    refused = admit(listener, tracker, peer.host)
    return Arrived(peer, stream) if refused is None else TurnedAway(peer, refused)
