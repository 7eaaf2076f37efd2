"""Accept loops shared by the proxy and the embedded controller."""

import dataclasses
import errno
import logging
from collections.abc import Awaitable, Callable

import trio

from envelope.errors import ProtocolError
from proxy.net.arrival import TurnedAway, arrive
from proxy.net.binding import open_listeners
from proxy.net.connection import DeadlineWatch, KafkaConnection, Peer
from proxy.net.limits import ConnectionTracker
from proxy.net.refusals import OnRefused, refusal
from proxy.net.settings import ListenerConfig, TransportSettings
from proxy.net.tls.handshake import tls_handshake

log = logging.getLogger(__name__)

ConnectionHandler = Callable[[KafkaConnection, ListenerConfig], Awaitable[None]]
OnConnectionError = Callable[[str, str], None]
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


async def serve_listener(
    listener: ListenerConfig,
    handler: ConnectionHandler,
    *,
    transport: TransportSettings,
    tracker: ConnectionTracker | None = None,
    on_refused: OnRefused | None = None,
    on_error: OnConnectionError | None = None,
    stop_accepting: trio.Event | None = None,
    task_status: trio.TaskStatus[ListenerConfig] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Bind one listener; report it (with the real port when 0 was asked) once bound.

    Connection limits count against `tracker`; pass one tracker to every listener of a
    process so that per-IP and process-wide limits span them all. A connection refused
    at accept time (IP filter, limits, PROXY protocol) is logged and reported to `on_refused`. On SSL and
    SASL_SSL listeners the TLS handshake follows those checks. The peer is the TCP peer, or behind a trusted
    load balancer the client its PROXY protocol header names (proxy/net/arrival.py).
    A connection lost to a failed handshake or a protocol error is reported to `on_error`
    as (listener, "tls" | "protocol_error").

    When `stop_accepting` is set the listening sockets close (new connects are refused)
    and this returns once every accepted connection has ended: a graceful drain.
    """
    tracker = tracker if tracker is not None else ConnectionTracker()
    sockets = await open_listeners(listener.host or None, listener.port, reuse_port=transport.reuse_port)
    port = sockets[0].socket.getsockname()[1]
    bound = dataclasses.replace(
        listener,
        port=port,
        advertised_port=listener.advertised_port or port,
    )
    log.info("listening on %s %s:%s (%s)", bound.name, listener.host or "*", port, bound.security_protocol)
    for note in bound.ip_filter.notes if bound.ip_filter else ():
        log.warning("listener %s: %s", bound.name, note)

    async def handle(stream: trio.SocketStream) -> None:
        try:
            tcp_peer = Peer.of(stream)
        except OSError as exc:
            # The peer left between accept and now; an exception here would stop the whole listener.
            log.info("connection on %s gone before it could be served: %r", bound.name, exc)
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
        arrival = await arrive(stream, bound, tracker, tcp_peer)
        if isinstance(arrival, TurnedAway):
            refused = arrival.refusal
            log.warning("connection from %s refused on listener %s: %s", arrival.peer, bound.name, refused.detail)
            if on_refused is not None:
                # Awaited: the refusal is audited before the client sees its connection closed.
                await on_refused(refusal(bound, arrival.peer, refused.reason, refused.detail))
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
        peer = arrival.peer
        try:
            served = arrival.stream
            if bound.tls is not None:
                secured = await tls_handshake(served, bound, (peer.host, peer.port))
                if secured is None:
                    if on_error is not None:
                        on_error(bound.name, "tls")
                    return
                served = secured
            if not await _serve(served, bound, handler, transport, peer, watch) and on_error is not None:
                on_error(bound.name, "protocol_error")
        finally:
            tracker.release(bound.name, peer.host)

    # The deadlines of the connections' session loops (KafkaConnection.serving), kept by one task for all of them.
    watch = DeadlineWatch()
    async with trio.open_nursery() as mechanisms:
        # The SASL mechanisms' background work (fetching keys, say) runs for as long as a connection may log in.
        for server in dict.fromkeys(bound.sasl_servers.values()):
            await mechanisms.start(server.run)
        await mechanisms.start(watch.run)
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as acceptors:
                task_status.started(bound)
                for sock in sockets:
                    acceptors.start_soon(_accept_loop, sock, connections, handle)
                if stop_accepting is not None:
                    await stop_accepting.wait()
                    acceptors.cancel_scope.cancel()
            for sock in sockets:
                await sock.aclose()
            log.info("listener %s stopped accepting; waiting for its open connections", bound.name)
        mechanisms.cancel_scope.cancel()


async def _accept_loop(sock: trio.SocketListener, connections: trio.Nursery, handle: Callable[[trio.SocketStream], Awaitable[None]]) -> None:
    """Accept until cancelled; connection tasks live in `connections`, so they outlive the accepting."""
    while True:
        try:
            stream = await sock.accept()
        except OSError as exc:
            if exc.errno not in _OUT_OF_RESOURCES:
                raise
            # Too many open files and the like: wait for connections to end, as trio.serve_listeners does.
            log.error("accept failed: %s; retrying in 100 ms", exc)
            await trio.sleep(0.1)
            continue
        connections.start_soon(handle, stream)


async def _serve(
    stream: trio.abc.Stream, listener: ListenerConfig, handler: ConnectionHandler, transport: TransportSettings, peer: Peer, watch: DeadlineWatch
) -> bool:
    """Run the handler; False when the peer broke the protocol."""
    conn = KafkaConnection(
        stream, listener=listener.name, max_frame_size=transport.max_frame_size, idle_timeout=listener.idle_timeout, peer=peer, watch=watch
    )
    try:
        await handler(conn, listener)
    except ProtocolError as exc:
        # One broken peer (TLS or HTTP on a plaintext port, garbage) only loses its own connection.
        log.info("connection %s from %s closed: %s", conn.connection_id, conn.peer, exc)
        return False
    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError) as exc:
        log.info("connection %s from %s lost: %r", conn.connection_id, conn.peer, exc)
    except Exception:
        # A bug met by one request must cost that client its connection, not the whole listener.
        log.exception("connection %s from %s: unexpected error, closing it", conn.connection_id, conn.peer)
    finally:
        await conn.aclose()
    return True
