"""The honest floor of bench/forwarding: a trio relay that forwards as the proxy forwards, and does nothing else.

    python bench/forwarding/envelope_relay.py --upstream 127.0.0.1:9093 [--listen 127.0.0.1:0] [--links 4]

Per client connection it reads whole frames, answers ApiVersions (the proxy's own ranges intersected with
the upstream's, as the proxy computes them) and any SASL/PLAIN login itself, and for every other request
peeks at the header, wraps the untouched frame in an EnvelopeRequest (the proxy's template, a fixed
principal) and sends it over a pool of `--links` upstream connections (the proxy's controller.connections,
one envelope in flight on each), then unwraps the answer to the client as the controller wrote it. No
audit, no metrics, no authorization, no real login, no routing table: whatever the proxy spends beyond
this is its own cost. Prints {"listening": "host:port"} on stdout, then serves until killed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from functools import partial

import trio
from kio.schema.errors import ErrorCode

import apiversions
from envelope.apis import FORWARDABLE, ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, encode_response, request_schema, response_schema
from envelope.frames import FrameReader, encode_frame
from envelope.header import RequestHeaderInfo, peek_request_header
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap

RECEIVE_SIZE = 65536
PRINCIPAL = Principal("User", "alice")
UPSTREAM_USER, UPSTREAM_PASSWORD = "proxy", "any"


class Link:
    """One upstream connection, logged in, one request at a time."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader()
        self.correlation = itertools.count(1)

    async def exchange(self, frame: bytes) -> bytes:
        await self.stream.send_all(encode_frame(frame))
        while (answer := self.reader.next_frame()) is None:
            data = await self.stream.receive_some(RECEIVE_SIZE)
            if not data:
                raise trio.BrokenResourceError("the upstream closed the connection")
            self.reader.feed(data)
        return answer

    async def call(self, api_key: int, version: int, values: dict[str, object]) -> object:
        body = build_entity(request_schema(api_key, version), values)
        answer = await self.exchange(encode_request(body, correlation_id=next(self.correlation), client_id="relay", api_version=version))
        return decode_response_body(api_key, version, answer)[1]


async def open_link(host: str, port: int) -> tuple[Link, dict[int, apiversions.VersionRange]]:
    link = Link(await trio.open_tcp_stream(host, port))
    versions = await link.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "relay", "client_software_version": "1"})
    await link.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    token = f"\x00{UPSTREAM_USER}\x00{UPSTREAM_PASSWORD}".encode()
    await link.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
    return link, apiversions.ranges_of(versions)


def _answer(header: RequestHeaderInfo, values: dict[str, object]) -> bytes:
    return encode_response(build_entity(response_schema(header.api_key, header.api_version), values), correlation_id=header.correlation_id)


class Relay:
    def __init__(self, links: list[Link], upstream_ranges: dict[int, apiversions.VersionRange]) -> None:
        self.free_send, self.free = trio.open_memory_channel[Link](len(links))
        for link in links:
            self.free_send.send_nowait(link)
        own = {**apiversions.CONNECTION_RANGES, **{key: apiversions.kio_range(key) for key in FORWARDABLE}}
        self.ranges = apiversions.intersect(own, upstream_ranges, FORWARDABLE)
        self.correlation = itertools.count(1)

    async def forward(self, frame: bytes, header: RequestHeaderInfo, client_ip: str) -> bytes:
        envelope = wrap(frame, PRINCIPAL, client_ip, correlation_id=next(self.correlation), client_id=header.client_id)
        link = await self.free.receive()
        try:
            answer = await link.exchange(envelope)
        finally:
            self.free_send.send_nowait(link)
        error_code, response = unwrap(answer)
        if error_code != ErrorCode.none or response is None:
            raise trio.BrokenResourceError(f"the upstream answered the envelope with error {error_code}")
        return response

    async def serve(self, client: trio.SocketStream) -> None:
        client_ip = client.socket.getpeername()[0]
        reader = FrameReader()
        async with client:
            try:
                while data := await client.receive_some(RECEIVE_SIZE):
                    reader.feed(data)
                    while (frame := reader.next_frame()) is not None:
                        await client.send_all(encode_frame(await self.answer(frame, client_ip)))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def answer(self, frame: bytes, client_ip: str) -> bytes:
        header = peek_request_header(frame)
        if header.api_key == ApiKey.API_VERSIONS:
            return apiversions.build_response(header.api_version, header.correlation_id, self.ranges)
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            return _answer(header, {"error_code": ErrorCode.none, "mechanisms": ["PLAIN"]})
        if header.api_key == ApiKey.SASL_AUTHENTICATE:
            return _answer(header, {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": b"", "session_lifetime": 0})
        return await self.forward(frame, header, client_ip)


async def _serve(listen: str, upstream: str, links: int) -> None:
    listen_host, listen_port = listen.rsplit(":", 1)
    up_host, up_port = upstream.rsplit(":", 1)
    opened = [await open_link(up_host, int(up_port)) for _ in range(links)]
    relay = Relay([link for link, _ in opened], opened[0][1])
    listeners = await trio.open_tcp_listeners(int(listen_port), host=listen_host)
    bound = listeners[0].socket.getsockname()
    print(json.dumps({"listening": f"{bound[0]}:{bound[1]}"}), flush=True)
    await trio.serve_listeners(partial(Relay.serve, relay), listeners)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="host:port of a controller that takes Envelopes (the zero-work upstream)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="host:port to listen on (default %(default)s)")
    parser.add_argument("--links", type=int, default=4, help="upstream connections, one envelope in flight on each (default: the proxy's %(default)s)")
    args = parser.parse_args(argv)
    trio.run(_serve, args.listen, args.upstream, args.links)
    return 0


if __name__ == "__main__":
    sys.exit(main())
