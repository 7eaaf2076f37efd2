"""The embedded controller and a proxy in front of it, on loopback ephemeral ports.

Used by `envelope-proxy demo` and by the tests: one call gives a running
pair with known users, so a real Kafka client can be pointed at it.
"""

from dataclasses import dataclass
from pathlib import Path

import trio

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from proxy.app import RunningProxy, run_proxy
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.net.sasl.login_modules import plain_jaas

DEFAULT_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "mallory": "mallory-secret"}
PROXY_USER, PROXY_PASSWORD = "proxy", "proxy-secret"


def controller_properties(
    host: str = "127.0.0.1", port: int = 0, super_users: str = "User:proxy;User:admin", users: dict[str, str] | None = None
) -> dict[str, str]:
    logins = {PROXY_USER: PROXY_PASSWORD, **(users or {})}
    return {
        "node.id": "1",
        "process.roles": "controller",
        "listeners": f"CONTROLLER://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain_jaas(**{f"user_{name}": password for name, password in logins.items()}),
        "super.users": super_users,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    }


def proxy_properties(controller_port: int, audit_dir: Path, users: dict[str, str] | None = None, host: str = "127.0.0.1") -> dict[str, str]:
    users = users or DEFAULT_USERS
    return {
        "node.id": "100",
        "listeners": f"CLIENT://{host}:0,PLAIN://{host}:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": plain_jaas(**{f"user_{name}": password for name, password in users.items()}),
        "controller.quorum.bootstrap.servers": f"{host}:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain_jaas(username=PROXY_USER, password=PROXY_PASSWORD),
        "audit.log.dir": str(audit_dir),
        "request.timeout.ms": "10000",
        # Reads are authorized at the proxy against the controller's ACLs; admin sees everything.
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }


@dataclass
class ProxyRun:
    """A proxy started in a nursery: `stop()` drains it (as SIGTERM does) and returns once it has stopped."""

    running: RunningProxy
    shutdown: trio.Event
    stopped: trio.Event

    async def stop(self) -> None:
        self.shutdown.set()
        await self.stopped.wait()


async def start_proxy(nursery: trio.Nursery, config: ProxyConfig) -> ProxyRun:
    """The one way the stack, the demo and the tests run a proxy in-process."""
    shutdown, stopped = trio.Event(), trio.Event()

    async def serve(task_status: trio.TaskStatus[RunningProxy]) -> None:
        try:
            await run_proxy(config, shutdown=shutdown, task_status=task_status)
        finally:
            stopped.set()

    running: RunningProxy = await nursery.start(serve)
    return ProxyRun(running, shutdown, stopped)


@dataclass
class EmbeddedStack:
    controller: EmbeddedController
    proxy: RunningProxy
    proxy_config: ProxyConfig
    controller_port: int

    @property
    def sasl_address(self) -> str:
        return self.proxy.address("CLIENT")

    @property
    def plaintext_address(self) -> str:
        return self.proxy.address("PLAIN")


async def start_stack(
    nursery: trio.Nursery,
    audit_dir: Path,
    *,
    users: dict[str, str] | None = None,
    proxy_overrides: dict[str, str] | None = None,
    controller_overrides: dict[str, str] | None = None,
) -> EmbeddedStack:
    """`proxy_overrides` / `controller_overrides` replace or add properties (more listeners, other logins, timeouts)."""
    controller = EmbeddedController(parse_controller_config({**controller_properties(), **(controller_overrides or {})}))
    bound = await nursery.start(controller.run)
    controller_port = bound[0].port
    config = parse_proxy_config({**proxy_properties(controller_port, audit_dir, users), **(proxy_overrides or {})})
    run = await start_proxy(nursery, config)
    return EmbeddedStack(controller, run.running, config, controller_port)


def client_config(address: str, user: str, password: str | None = None) -> dict[str, str]:
    """confluent-kafka settings for a SASL_PLAINTEXT/PLAIN user of the stack."""
    return {
        "bootstrap.servers": address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password if password is not None else DEFAULT_USERS[user],
    }
