"""Accept side of SSL and SASL_SSL listeners: the TLS handshake and the client certificate's principal.

The handshake runs after the accept-time checks (IP filter, connection limits), with the
listener's current server context (`ReloadingServerContext.current()` notices rotated
store files), under `ssl.handshake.timeout.ms`. A failed handshake costs only its own
connection and is logged at INFO.
"""

import logging
from typing import Protocol

import trio

from envelope.principal import Principal
from proxy.net.tls.principal import principal_for_peer
from proxy.net.tls.settings import ListenerTls

log = logging.getLogger(__name__)

SSL_MECHANISM = "SSL"  # the `mechanism` of sessions authenticated by a client certificate (or anonymous) on SSL listeners


class TlsListener(Protocol):
    """What the handshake needs of a listener (proxy/net/settings.py `ListenerConfig`)."""

    @property
    def name(self) -> str: ...

    @property
    def tls(self) -> ListenerTls | None: ...


def _reason(exc: BaseException) -> str:
    if isinstance(exc, trio.TooSlowError):
        return "timed out"
    cause = exc.__cause__ or exc.__context__
    return str(cause or exc) or type(exc).__name__


async def tls_handshake(
    stream: trio.abc.Stream, listener: TlsListener, peer: tuple[str, int]
) -> trio.SSLStream[trio.abc.Stream] | None:
    """`stream` is the TCP stream, or (behind a load balancer) the stream after its PROXY protocol header."""
    # The TLS stream once the handshake completed, or None (the connection is then closed).
    tls = listener.tls
    assert tls is not None, f"listener {listener.name} has no TLS settings"
    secured = trio.SSLStream(stream, tls.context.current(), server_side=True)
    try:
        with trio.fail_after(tls.handshake_timeout):
            await secured.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError) as exc:
        log.info("TLS handshake with %s:%s on listener %s failed: %s", peer[0], peer[1], listener.name, _reason(exc))
        await trio.aclose_forcefully(secured)
        return None
    except Exception:
        # Whatever else goes wrong must cost this connection only, never the listener.
        log.exception("TLS handshake with %s:%s on listener %s: unexpected error", peer[0], peer[1], listener.name)
        await trio.aclose_forcefully(secured)
        return None
    return secured


def peer_certificate(stream: trio.abc.Stream) -> bytes | None:
    """The DER client certificate the handshake verified, or None."""
    if not isinstance(stream, trio.SSLStream):
        return None
    cert = stream.getpeercert(binary_form=True)
    return bytes(cert) if cert else None


def certificate_principal(stream: trio.abc.Stream, listener: TlsListener) -> Principal:
    """An SSL listener's principal: the certificate's DN mapped by `ssl.principal.mapping.rules`, User:ANONYMOUS without one.

    Raises `NoMatchingRule` when no rule applies (Kafka: authentication fails).
    """
    assert listener.tls is not None, f"listener {listener.name} has no TLS settings"
    return Principal("User", principal_for_peer(peer_certificate(stream), listener.tls.mapper))
