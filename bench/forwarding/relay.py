"""The Python floor of bench/forwarding: a bare trio TCP relay, no Kafka parsing, no audit.

    python bench/forwarding/relay.py --upstream 127.0.0.1:9093 [--listen 127.0.0.1:0]

Prints {"listening": "host:port"} on stdout, then copies bytes both ways between each accepted
connection and a new connection to the upstream until killed. Whatever the proxy does per request
beyond this (framing, decoding, routing, audit, envelope wrapping) is its own cost.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

import trio

RECEIVE_SIZE = 65536


async def _pump(source: trio.SocketStream, sink: trio.SocketStream, done: trio.CancelScope) -> None:
    try:
        while data := await source.receive_some(RECEIVE_SIZE):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        done.cancel()


async def _relay(host: str, port: int, client: trio.SocketStream) -> None:
    try:
        upstream = await trio.open_tcp_stream(host, port)
    except OSError:
        await client.aclose()
        return
    async with client, upstream, trio.open_nursery() as nursery:
        nursery.start_soon(_pump, client, upstream, nursery.cancel_scope)
        nursery.start_soon(_pump, upstream, client, nursery.cancel_scope)


async def _serve(listen: str, upstream: str) -> None:
    listen_host, listen_port = listen.rsplit(":", 1)
    up_host, up_port = upstream.rsplit(":", 1)
    listeners = await trio.open_tcp_listeners(int(listen_port), host=listen_host)
    bound = listeners[0].socket.getsockname()
    print(json.dumps({"listening": f"{bound[0]}:{bound[1]}"}), flush=True)
    await trio.serve_listeners(partial(_relay, up_host, int(up_port)), listeners)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="host:port to relay to")
    parser.add_argument("--listen", default="127.0.0.1:0", help="host:port to listen on (default %(default)s)")
    args = parser.parse_args(argv)
    trio.run(_serve, args.listen, args.upstream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
