"""Accept loops shared by the proxy and the embedded controller."""

import dataclasses
import logging
from collections.abc import Awaitable, Callable

import trio

from envelope.errors import ProtocolError
from proxy.connection import KafkaConnection
from proxy.listener_config import ListenerConfig, TransportSettings

log = logging.getLogger(__name__)

ConnectionHandler = Callable[[KafkaConnection, ListenerConfig], Awaitable[None]]


async def serve_listener(
    listener: ListenerConfig,
    handler: ConnectionHandler,
    *,
    transport: TransportSettings,
    task_status: trio.TaskStatus[ListenerConfig] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Bind one listener; report it (with the real port when 0 was asked) once bound."""
    sockets = await trio.open_tcp_listeners(listener.port, host=listener.host or None)
    port = sockets[0].socket.getsockname()[1]
    bound = dataclasses.replace(
        listener,
        port=port,
        advertised_port=listener.advertised_port or port,
    )
    log.info("listening on %s %s:%s (%s)", bound.name, listener.host or "*", port, bound.security_protocol)

    async def handle(stream: trio.SocketStream) -> None:
        conn = KafkaConnection(stream, listener=bound.name, max_frame_size=transport.max_frame_size, idle_timeout=transport.idle_timeout)
        try:
            await handler(conn, bound)
        except ProtocolError as exc:
            # One broken peer (TLS or HTTP on a plaintext port, garbage) only loses its own connection.
            log.info("connection %s from %s:%s closed: %s", conn.connection_id, conn.peer.host, conn.peer.port, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError) as exc:
            log.info("connection %s from %s:%s lost: %r", conn.connection_id, conn.peer.host, conn.peer.port, exc)
        finally:
            await conn.aclose()

    async with trio.open_nursery() as nursery:
        task_status.started(bound)
        for sock in sockets:
            nursery.start_soon(trio.serve_listeners, handle, [sock])
