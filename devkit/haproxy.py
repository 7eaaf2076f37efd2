"""HAProxy (Debian's package) in TCP mode on loopback, in front of the proxy, for the tests behind a load balancer.

Kafka clients cannot choose their source address, so each client identity enters through a "door": a frontend on
127.0.0.1 whose backend connects to the load balancer's own frontend from a chosen loopback source (`source`).
The load balancer then sees that source as the client, and writes it in the PROXY protocol header it sends the
proxy, connecting itself from 127.0.0.1.
"""

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devkit.processes import free_port, stop_process, wait_for_port

LOAD_BALANCER_SOURCE = "127.0.0.1"
HEALTH_CHECK_INTERVAL_MS = 300
# The health check asks what a Kafka client asks first: ApiVersions v0, correlation id 7 (size, key 18, version 0,
# correlation id, null client id). HAProxy's plain connect check resets the connection at once, before a server can
# read its header; this one waits for the answer, so the server is UP only while the proxy serves the LOCAL connection.
HEALTH_CHECK_REQUEST = "0000000a0012000000000007ffff"
HEALTH_CHECK_ANSWER = "00000007"


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next((path for path in ("/usr/sbin/haproxy",) if Path(path).exists()), None)


@dataclass(frozen=True)
class Backend:
    """One load balancer frontend in front of one proxy listener."""

    name: str
    proxy_port: int
    send_proxy: str  # "send-proxy" (v1) or "send-proxy-v2"
    health_check: bool = False
    port: int = field(default_factory=free_port)


@dataclass(frozen=True)
class Door:
    """Where a Kafka client enters as `source`, towards `backend`."""

    name: str
    backend: str
    source: str
    port: int = field(default_factory=free_port)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def config_text(backends: list[Backend], doors: list[Door]) -> str:
    ports = {backend.name: backend.port for backend in backends}
    # timeout check: without it HAProxy gives a whole check `inter` (300 ms) to be answered, and on a loaded machine
    # three slow answers in a row mark the proxy DOWN, and HAProxy closes the next client's connection
    lines = ["global", "    maxconn 256", "defaults", "    mode tcp", "    timeout connect 5s", "    timeout check 5s", "    timeout client 60s", "    timeout server 60s"]
    for door in doors:
        lines += [f"frontend door_{door.name}", f"    bind 127.0.0.1:{door.port}", f"    default_backend to_{door.name}"]
        lines += [f"backend to_{door.name}", f"    server lb 127.0.0.1:{ports[door.backend]} source {door.source}"]
    for backend in backends:
        check = f" check check-send-proxy inter {HEALTH_CHECK_INTERVAL_MS}" if backend.health_check else ""
        lines += [f"frontend lb_{backend.name}", f"    bind 127.0.0.1:{backend.port}", f"    default_backend proxy_{backend.name}"]
        lines += [f"backend proxy_{backend.name}"]
        if backend.health_check:
            lines += [
                "    option tcp-check",
                "    tcp-check connect send-proxy",
                f"    tcp-check send-binary {HEALTH_CHECK_REQUEST}",
                f"    tcp-check expect binary {HEALTH_CHECK_ANSWER}",
            ]
        lines += [f"    server proxy 127.0.0.1:{backend.proxy_port} source {LOAD_BALANCER_SOURCE} {backend.send_proxy}{check}"]
    return "\n".join(lines) + "\n"


def start_haproxy(directory: Path, backends: list[Backend], doors: list[Door]) -> "subprocess.Popen[Any]":
    """HAProxy in the foreground (-db), its output in `directory/haproxy.log`; once every door listens."""
    binary = haproxy_binary()
    assert binary is not None, "haproxy is not installed"
    config = directory / "haproxy.cfg"
    config.write_text(config_text(backends, doors))
    log = directory / "haproxy.log"
    process = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log.open("w"), stderr=subprocess.STDOUT)
    for door in doors:
        wait_for_port(door.port, process, deadline=20, log=log)
    return process


__all__ = ["Backend", "Door", "haproxy_binary", "start_haproxy", "stop_process"]
