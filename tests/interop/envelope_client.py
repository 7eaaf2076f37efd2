"""A forwarder's raw connection to a controller listener, and the two controllers it may talk to.

Tests that must choose the forwarded principal freely (a fresh one per case,
so no other test's ACLs interfere) send Envelopes themselves, logged in as
the proxy, exactly as the proxy would.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import trio

from authz import Operation, PatternType, PermissionType, ResourceType
from authz.admin_apis import response_errors
from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from devkit.kafka_node_config import DELEGATION_TOKEN_SECRET
from envelope.codec import decode_response_body
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap
from envelope_proxy.embedded import PROXY_PASSWORD, PROXY_USER, controller_properties

ADMIN = Principal("User", "admin")
BROKER_ID = 1  # the real node's id, and the embedded controller's one registered broker


@dataclass
class Controller:
    kind: str
    address: str
    proxy_password: str


class EnvelopeClient:
    """A forwarder's connection: every request travels in an Envelope as the principal it names."""

    def __init__(self, controller: Controller) -> None:
        self.sock = wire.connect(controller.address, timeout=30.0)
        assert wire.sasl_plain_login(self.sock, PROXY_USER, controller.proxy_password) == 0
        self.correlation_id = 10

    def call(self, principal: Principal, api_key: int, version: int, values: dict[str, Any], host: str = "127.0.0.1") -> Any:
        self.correlation_id += 1
        inner = wire.request(api_key, version, values, correlation_id=self.correlation_id, client_id="envelope-client")
        frame = wire.exchange(self.sock, wrap(inner, principal, host, correlation_id=self.correlation_id, client_id="proxy"))
        code, data = unwrap(frame)
        assert code == 0 and data is not None, f"envelope error {code}"
        _, body = decode_response_body(api_key, version, data)
        return body

    def codes(self, principal: Principal, api_key: int, version: int, values: dict[str, Any], host: str = "127.0.0.1") -> set[int]:
        top, items = response_errors(api_key, self.call(principal, api_key, version, values, host))
        return {top, *(item.error_code for item in items)}

    def grant(self, principal: Principal, resource_type: ResourceType, name: str, operation: Operation) -> None:
        self.create_acls(
            [
                {
                    "resource_type": resource_type,
                    "resource_name": name,
                    "resource_pattern_type": PatternType.LITERAL,
                    "principal": str(principal),
                    "host": "*",
                    "operation": operation,
                    "permission_type": PermissionType.ALLOW,
                }
            ]
        )

    def create_acls(self, creations: list[dict[str, Any]]) -> None:
        """As the super user; CreateAcls v3 fields."""
        answer = self.call(ADMIN, 30, 3, {"creations": creations})
        assert [int(r.error_code) for r in answer.results] == [0] * len(creations), [r.error_message for r in answer.results]

    def admin_codes(self, api_key: int, version: int, values: dict[str, Any]) -> set[int]:
        return self.codes(ADMIN, api_key, version, values)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
        answer = self.call(ADMIN, 19, 7, {"topics": [topic], "timeout": 30000, "validate_only": False})
        assert [int(t.error_code) for t in answer.topics] == [0]

    def close(self) -> None:
        self.sock.close()



def unique_topic(prefix: str = "ec-topic") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run_embedded_controller(extra: dict[str, str] | None = None) -> Iterator[Controller]:
    """The embedded controller in its own trio loop on a thread, so blocking probes can talk to it; `extra`
    properties are added to (or override) its configuration (another authorizer, say)."""
    port: list[int] = []
    ready = threading.Event()
    token: list[trio.lowlevel.TrioToken] = []
    stop = trio.Event()

    async def main() -> None:
        # delegation tokens on, as on the node (devkit/kafka_node.py)
        props = {**controller_properties(), "delegation.token.secret.key": DELEGATION_TOKEN_SECRET, **(extra or {})}
        controller = EmbeddedController(parse_controller_config(props))
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(controller.run)
            port.append(bound[0].port)
            token.append(trio.lowlevel.current_trio_token())
            ready.set()
            await stop.wait()
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    assert ready.wait(30), "embedded controller did not start"
    yield Controller("embedded", f"127.0.0.1:{port[0]}", PROXY_PASSWORD)
    trio.from_thread.run_sync(stop.set, trio_token=token[0])
    thread.join(30)
