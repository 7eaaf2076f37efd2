"""The operations endpoint (`metrics.listen`): /metrics, /healthz, /readyz over HTTP/1.1.

h11 parses the HTTP; each connection gets one request, a bounded header
size and a deadline, so a slow or hostile scraper cannot hold the proxy.
"""

import logging
from collections.abc import Callable

import h11
import trio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 16384
CONNECTION_DEADLINE = 10.0


class OperationsEndpoint:
    def __init__(self, registry: CollectorRegistry, ready: Callable[[], bool]) -> None:
        self.registry = registry
        self.ready = ready

    def answer(self, method: str, target: str) -> tuple[int, str, bytes]:
        """Status, content type and body for one request."""
        path = target.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"only GET\n"
        if path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)
        if path == "/healthz":
            return 200, "text/plain", b"ok\n"
        if path == "/readyz":
            return (200, "text/plain", b"ready\n") if self.ready() else (503, "text/plain", b"not ready\n")
        return 404, "text/plain", b"not found\n"

    async def handle(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
        try:
            with trio.fail_after(CONNECTION_DEADLINE):
                request = await self._read_request(stream, connection)
                if request is None:
                    return
                status, content_type, body = self.answer(request.method.decode(), request.target.decode())
                headers = [("content-type", content_type), ("content-length", str(len(body))), ("connection", "close")]
                data = connection.send(h11.Response(status_code=status, headers=headers))
                if request.method != b"HEAD":
                    data = (data or b"") + (connection.send(h11.Data(data=body)) or b"")
                data = (data or b"") + (connection.send(h11.EndOfMessage()) or b"")
                await stream.send_all(data)
        except (trio.TooSlowError, trio.BrokenResourceError, h11.RemoteProtocolError, h11.LocalProtocolError) as exc:
            log.debug("operations endpoint: %r", exc)
        finally:
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await stream.aclose()

    async def _read_request(self, stream: trio.SocketStream, connection: h11.Connection) -> h11.Request | None:
        while True:
            event = connection.next_event()
            if isinstance(event, h11.Request):
                return event
            if event is h11.NEED_DATA:
                data = await stream.receive_some(4096)
                connection.receive_data(data)
                if not data:
                    return None
                continue
            return None  # ConnectionClosed or anything unexpected: nothing to answer


def parse_listen(text: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port`; ValueError with the reason otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("expected host:port, e.g. 127.0.0.1:9404")
    return host.strip("[]"), int(port)


async def serve_operations(
    endpoint: OperationsEndpoint, host: str, port: int, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve until cancelled; reports the bound port (useful with port 0)."""
    try:
        listeners = await trio.open_tcp_listeners(port, host=host or None)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot listen on {host or '*'}:{port} (metrics): {exc.strerror or exc}") from exc
    bound = listeners[0].socket.getsockname()[1]
    log.info("operations endpoint on %s:%s (/metrics /healthz /readyz)", host or "*", bound)
    task_status.started(bound)
    await trio.serve_listeners(endpoint.handle, listeners)
