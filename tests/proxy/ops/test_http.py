"""The operations endpoint over a real loopback socket: metrics text, health, readiness flips, bad requests."""

import urllib.error
import urllib.request
from typing import Any

import trio

from proxy.ops.http import OperationsEndpoint, parse_listen, serve_operations
from proxy.ops.metrics import ProxyMetrics


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_metrics_health_and_readiness(nursery: Any) -> None:
    metrics = ProxyMetrics()
    ready = {"value": False}
    port = await nursery.start(serve_operations, OperationsEndpoint(metrics.registry, lambda: ready["value"]), "127.0.0.1", 0)
    base = f"http://127.0.0.1:{port}"
    metrics.requests.labels("CLIENT", "CreateTopics", "forwarded").inc(2)

    assert await trio.to_thread.run_sync(_get, f"{base}/healthz") == (200, "ok\n")
    assert await trio.to_thread.run_sync(_get, f"{base}/readyz") == (503, "not ready\n")
    ready["value"] = True
    assert await trio.to_thread.run_sync(_get, f"{base}/readyz") == (200, "ready\n")
    status, text = await trio.to_thread.run_sync(_get, f"{base}/metrics")
    assert status == 200
    assert 'envelope_proxy_requests_total{api="CreateTopics",listener="CLIENT",outcome="forwarded"} 2.0' in text
    assert (await trio.to_thread.run_sync(_get, f"{base}/nothing"))[0] == 404


async def test_garbage_gets_no_answer_and_does_not_stop_the_endpoint(nursery: Any) -> None:
    port = await nursery.start(serve_operations, OperationsEndpoint(ProxyMetrics().registry, lambda: True), "127.0.0.1", 0)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(b"\x16\x03\x01 not http at all\r\n\r\n")
    with trio.fail_after(10):
        while await stream.receive_some(1024):
            pass  # whatever h11 answers (400) or nothing, the connection ends
    await stream.aclose()
    assert await trio.to_thread.run_sync(_get, f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:9404") == ("127.0.0.1", 9404)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("9404", "host:", "host:99999", "host:x"):
        try:
            parse_listen(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} accepted")
