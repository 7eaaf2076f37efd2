"""A small, bounded HTTP/1.1 client on trio's own sockets (h11), and `file:` reads, for OAUTHBEARER's endpoints.

Two callers: the JWKS cache (proxy/net/sasl/oauth/validator.py, a GET of the
`sasl.oauthbearer.jwks.endpoint.url`) and the proxy's own client-credentials
login (proxy/net/sasl/oauth/login.py, a POST to the
`sasl.oauthbearer.token.endpoint.url`). Both URLs may also be `file:` URLs, as
in Kafka: the JWKS, or the access token itself, read from a file.

Everything is bounded: the connection (`connect_timeout`), the whole answer
(`read_timeout`, headers and body together), and the body's size
(`max_bytes`: a larger `Content-Length`, or more bytes than that, fail before
they are kept). Nothing here blocks the event loop: name resolution runs in
trio's worker thread, files are read in a worker thread too, and a hung peer
costs only the caller's task, which gets an HttpError at its deadline.

No proxies (Java's HttpURLConnection does not read the environment either), no
redirects (Kafka's token retriever does not follow them for a POST, and a JWKS
that moved is a configuration to fix), no cookies, one request per connection.
"""

from __future__ import annotations

import ssl
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import h11
import trio

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpError",
    "HttpResponse",
    "fetch",
    "read_file_url",
    "file_url_path",
]

DEFAULT_TIMEOUT = 10.0
"""Seconds, for the connection and again for the answer, when the caller names none."""

_USER_AGENT = "kafka-envelope-proxy"
_READ_CHUNK = 16384
_MAX_HEADER_BYTES = 64 * 1024


class HttpError(Exception):
    """The endpoint could not be read: unreachable, too slow, too large, not HTTP, or a file that cannot be read.
    The message names the URL (without any userinfo) and the reason, never a body."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = field(repr=False)
    headers: tuple[tuple[str, str], ...] = ()

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in self.headers:
            if key == wanted:
                return value
        return None


def _shown(url: str) -> str:
    """The URL for messages: without userinfo, query or fragment (which may carry secrets), and bounded."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url[:200]
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))[:200]


def file_url_path(url: str) -> str:
    """The local path of a `file:` URL (`file:/p`, `file:///p`, `file://localhost/p`), percent-decoded.
    ValueError for another host or an empty path."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() != "file":
        raise ValueError("not a file: URL")
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"a file: URL on another host ({parts.netloc})")
    path = urllib.parse.unquote(parts.path)
    if not path:
        raise ValueError("a file: URL without a path")
    return path


def _read_bounded(path: str, max_bytes: int) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise HttpError(f"{path} is larger than {max_bytes} bytes")
    return data


async def read_file_url(url: str, *, max_bytes: int, timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """The bytes of a `file:` URL, at most `max_bytes`, read in a worker thread within `timeout`."""
    try:
        path = file_url_path(url)
    except ValueError as exc:
        raise HttpError(f"{_shown(url)}: {exc}") from None
    try:
        with trio.fail_after(timeout):
            # abandon_on_cancel: a file on a hung network mount must not hold the caller past its deadline
            return await trio.to_thread.run_sync(_read_bounded, path, max_bytes, abandon_on_cancel=True)
    except trio.TooSlowError:
        raise HttpError(f"{path}: not read within {timeout:g} s") from None
    except OSError as exc:
        raise HttpError(f"{path}: {exc.strerror or exc}") from None


async def _connect(scheme: str, host: str, port: int, ssl_context: ssl.SSLContext | None) -> trio.abc.Stream:
    stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
    if scheme == "https":
        context = ssl_context if ssl_context is not None else ssl.create_default_context()
        tls = trio.SSLStream(stream, context, server_hostname=host, https_compatible=True)
        try:
            await tls.do_handshake()
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return tls
    return stream


async def _exchange(stream: trio.abc.Stream, request: h11.Request, body: bytes, max_bytes: int, shown: str) -> HttpResponse:
    connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEADER_BYTES)
    await stream.send_all(connection.send(request) or b"")
    if body:
        await stream.send_all(connection.send(h11.Data(data=body)) or b"")
    await stream.send_all(connection.send(h11.EndOfMessage()) or b"")
    response: h11.Response | None = None
    chunks: list[bytes] = []
    size = 0
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(_READ_CHUNK)
            connection.receive_data(bytes(data))  # b"" marks the end of the stream
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            response = event
            length = dict(event.headers).get(b"content-length")
            if length is not None and length.isdigit() and int(length) > max_bytes:
                raise HttpError(f"{shown}: the answer announces {int(length)} bytes, more than the {max_bytes} allowed")
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > max_bytes:
                raise HttpError(f"{shown}: the answer is larger than {max_bytes} bytes")
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            break
        elif isinstance(event, h11.ConnectionClosed):
            raise HttpError(f"{shown}: the connection closed before a whole answer")
    assert response is not None
    headers = tuple((bytes(k).decode("latin-1").lower(), bytes(v).decode("latin-1")) for k, v in response.headers)
    return HttpResponse(int(response.status_code), b"".join(chunks), headers)


async def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: Sequence[tuple[str, str]] | Mapping[str, str] = (),
    body: bytes = b"",
    max_bytes: int,
    connect_timeout: float = DEFAULT_TIMEOUT,
    read_timeout: float = DEFAULT_TIMEOUT,
    ssl_context: ssl.SSLContext | None = None,
) -> HttpResponse:
    """One HTTP/1.1 request to an `http:` or `https:` URL and its whole answer (any status), or HttpError.

    A `file:` URL answers 200 with the file's bytes (for GET and POST alike, as Kafka reads a
    token or a JWKS from a file). `https:` uses `ssl_context` (default: the system's trust store,
    host name checked)."""
    shown = _shown(url)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise HttpError(f"{shown}: not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme == "file":
        return HttpResponse(200, await read_file_url(url, max_bytes=max_bytes, timeout=read_timeout))
    if scheme not in ("http", "https"):
        raise HttpError(f"{shown}: only http, https and file URLs are supported")
    host = parts.hostname
    if not host:
        raise HttpError(f"{shown}: the URL names no host")
    port = port if port is not None else (443 if scheme == "https" else 80)
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    authority = parts.netloc.rpartition("@")[2]
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    names = {name.lower() for name, _ in items}
    request_headers = [("Host", authority), ("User-Agent", _USER_AGENT), ("Connection", "close"), *items]
    if body or method.upper() == "POST":
        request_headers.append(("Content-Length", str(len(body))))
    if "accept" not in names:
        request_headers.append(("Accept", "application/json"))
    try:
        request = h11.Request(method=method.upper(), target=target, headers=request_headers)
    except h11.LocalProtocolError as exc:
        raise HttpError(f"{shown}: cannot form the request: {exc}") from None
    stream: trio.abc.Stream | None = None
    try:
        try:
            with trio.fail_after(connect_timeout):
                stream = await _connect(scheme, host, port, ssl_context)
        except trio.TooSlowError:
            raise HttpError(f"{shown}: no connection within {connect_timeout:g} s") from None
        try:
            with trio.fail_after(read_timeout):
                return await _exchange(stream, request, body, max_bytes, shown)
        except trio.TooSlowError:
            raise HttpError(f"{shown}: no whole answer within {read_timeout:g} s") from None
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
        raise HttpError(f"{shown}: {exc}") from None
    except (h11.RemoteProtocolError, h11.LocalProtocolError) as exc:
        raise HttpError(f"{shown}: not an HTTP/1.1 answer: {exc}") from None
    finally:
        if stream is not None:
            await trio.aclose_forcefully(stream)
