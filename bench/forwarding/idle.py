"""Memory of idle authenticated connections: prints JSON.

Starts the proxy as bench/forwarding/run.py does (a SASL_PLAINTEXT/PLAIN listener, the zero-work
upstream), opens N connections that each ask ApiVersions and log in with PLAIN, then leave them
idle past `connections.preauth.idle.ms` (10 s by default): a logged-in connection is bound only by
`connections.max.idle.ms`, as in Kafka. The proxy's resident memory (`VmRSS`) before the
connections and while they are idle, divided by N, is the cost of one. Every connection is then
checked to be still open: it must answer a second ApiVersions.

    .venv/bin/python bench/forwarding/idle.py [--connections 2000] [--idle 12]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import encode_request, request_schema
from envelope.frames import FrameReader, encode_frame

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from processes import Processes, rss_kb  # noqa: E402
from stack import CLIENT_PASSWORD, CLIENT_USER, start_announcing, start_proxy  # noqa: E402

OPEN_AT_ONCE = 64
STEP_TIMEOUT = 30.0


def _request(api_key: int, version: int, values: dict[str, Any], correlation_id: int) -> bytes:
    body = build_entity(request_schema(api_key, version), values)
    return encode_frame(encode_request(body, correlation_id=correlation_id, client_id="idle-bench"))


async def _call(stream: trio.SocketStream, reader: FrameReader, frame: bytes) -> bytes:
    await stream.send_all(frame)
    while (answer := reader.next_frame()) is None:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionError("the proxy closed the connection")
        reader.feed(bytes(data))
    return answer


async def _log_in(host: str, port: int) -> tuple[trio.SocketStream, FrameReader]:
    stream = await trio.open_tcp_stream(host, port)
    reader = FrameReader()
    versions = {"client_software_name": "idle-bench", "client_software_version": "1"}
    await _call(stream, reader, _request(ApiKey.API_VERSIONS, 3, versions, 1))
    await _call(stream, reader, _request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, 2))
    token = b"\x00" + CLIENT_USER.encode() + b"\x00" + CLIENT_PASSWORD.encode()
    await _call(stream, reader, _request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, 3))
    return stream, reader


async def _measure(target: str, pid: int, count: int, idle: float) -> dict[str, Any]:
    host, port = target.rsplit(":", 1)
    before_kb = rss_kb(pid)
    opened: list[tuple[trio.SocketStream, FrameReader]] = []
    limiter = trio.CapacityLimiter(OPEN_AT_ONCE)

    async def open_one() -> None:
        async with limiter:
            with trio.fail_after(STEP_TIMEOUT):
                opened.append(await _log_in(host, int(port)))

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(open_one)
    logged_in_s = time.monotonic() - started
    await trio.sleep(idle)
    idle_kb = rss_kb(pid)
    still_open = 0
    with trio.fail_after(STEP_TIMEOUT * 4):
        for stream, reader in opened:
            try:
                await _call(stream, reader, _request(ApiKey.API_VERSIONS, 3, {"client_software_name": "idle-bench", "client_software_version": "1"}, 4))
                still_open += 1
            except (ConnectionError, trio.BrokenResourceError, OSError):
                pass
    for stream, _ in opened:
        await stream.aclose()
    return {
        "connections": count,
        "idle_s": idle,
        "login_s": round(logged_in_s, 2),
        "proxy_rss_before_kb": before_kb,
        "proxy_rss_idle_kb": idle_kb,
        "kb_per_idle_connection": round((idle_kb - before_kb) / count, 2),
        "still_open_after_idle": still_open,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000, help="idle authenticated connections (default %(default)s)")
    parser.add_argument("--idle", type=float, default=12.0, help="seconds they stay idle, past connections.preauth.idle.ms (default %(default)s)")
    parser.add_argument("--loadgen", type=Path, default=HERE / "bin" / "loadgen", help="the Go load generator (built by make bench-forwarding)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="idle-bench-") as folder, Processes(Path(folder)) as procs:
        upstream, _ = start_announcing(procs, "zero-work-upstream", [str(args.loadgen), "upstream", "--listen", "127.0.0.1:0"])
        target, pids = start_proxy(procs, "proxy", upstream, "flush", None)
        time.sleep(1)  # the proxy finds its controller; its memory settles before the baseline
        result = trio.run(_measure, target, pids[0], args.connections, args.idle)
    print(json.dumps({"benchmark": "idle-connections", **result}, indent=1))
    sys.exit(0 if result["still_open_after_idle"] == args.connections else 1)


if __name__ == "__main__":
    main()
