"""How long one huge read holds up everyone else: ApiVersions latency on a second connection
while a Metadata request naming N topics is decoded, authorized and answered. Prints JSON.

    python bench/stall/run.py --topics 100000 [--topics 400000]

The embedded controller and the proxy run as real processes on loopback (as in production);
this process sends the big request on one connection and an ApiVersions every 5 ms on another,
and reports the slowest and the 99th-percentile ApiVersions round trip while the big one is in
flight, next to the same figures with no big request (the baseline).
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from devkit.processes import free_port, wait_for_port, write_properties  # noqa: E402
from devkit.wire import connect, exchange, read_frame, request  # noqa: E402
from envelope.frames import encode_frame  # noqa: E402
from envelope_proxy.embedded import controller_properties, proxy_properties  # noqa: E402


def _api_versions_latencies(address: str, stop: threading.Event, out: list[float], limit: int = 20_000) -> None:
    sock = connect(address)
    frame = request(18, 3, {"client_software_name": "bench", "client_software_version": "1"})
    with sock:
        for _ in range(limit):
            if stop.is_set():
                return
            began = time.perf_counter()
            exchange(sock, frame)
            out.append((time.perf_counter() - began) * 1000)
            time.sleep(0.005)


def _measure(address: str, topics: int) -> dict[str, Any]:
    latencies: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=_api_versions_latencies, args=(address, stop, latencies))
    poller.start()
    time.sleep(0.3)
    began = time.perf_counter()
    size = 0
    if topics:
        big = request(3, 12, {"topics": [{"name": f"topic-{i:07d}", "topic_id": None} for i in range(topics)],
                              "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        size = len(big)
        sock = connect(address, timeout=300)
        with sock:
            sock.sendall(encode_frame(big))
            read_frame(sock)
    else:
        time.sleep(2)
    elapsed = time.perf_counter() - began
    stop.set()
    poller.join()
    during = sorted(latencies)
    return {
        "topics": topics,
        "request_bytes": size,
        "big_request_seconds": round(elapsed, 3),
        "apiversions_samples": len(during),
        "apiversions_max_ms": round(during[-1], 2),
        "apiversions_p99_ms": round(during[int(len(during) * 0.99) - 1], 2) if len(during) > 1 else None,
        "apiversions_median_ms": round(statistics.median(during), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, action="append", default=None)
    args = parser.parse_args()
    sizes = args.topics or [100_000]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        controller_port, proxy_port = free_port(), free_port()
        controller_file = write_properties(work / "controller.properties", controller_properties(port=controller_port))
        props = proxy_properties(controller_port, work / "audit")
        props["listeners"] = f"PLAIN://127.0.0.1:{proxy_port}"
        props["listener.security.protocol.map"] = "PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
        proxy_file = write_properties(work / "proxy.properties", props)
        logs = [(work / "controller.log").open("w"), (work / "proxy.log").open("w")]
        servers = [
            subprocess.Popen([sys.executable, "-m", "envelope_proxy.cli", "controller", "--config", str(controller_file)], cwd=ROOT, stdout=logs[0], stderr=subprocess.STDOUT),
            subprocess.Popen([sys.executable, "-m", "envelope_proxy.cli", "run", "--config", str(proxy_file)], cwd=ROOT, stdout=logs[1], stderr=subprocess.STDOUT),
        ]
        try:
            wait_for_port(controller_port, servers[0])
            wait_for_port(proxy_port, servers[1])
            address = f"127.0.0.1:{proxy_port}"
            runs = [_measure(address, 0)] + [_measure(address, n) for n in sizes]
        finally:
            for server in servers:
                server.terminate()
                server.wait(30)
    print(json.dumps({"benchmark": "stall", "target_apiversions_max_ms": 100, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
