"""Kafka's `kafka-metadata-quorum add-controller` and `remove-controller` (KIP-853) through the proxy, compared with the
same commands sent to the Kafka 4.3.1 node's broker, which forwards AddRaftVoter and RemoveRaftVoter as the proxy does.

The node's quorum is dynamic (formatted with --standalone). The controller to add is one that never started: its
configuration and formatted directory exist (the tool reads its id, directory id and listener from them), so the
leader refuses to add it (it cannot reach it: "Aborted add voter operation"), and a voter that does not exist cannot
be removed (VoterNotFoundException). Neither changes the shared node's
quorum; what is compared is that the proxy carries each command to the leader and back as the broker does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from devkit.kafka_jars import java_command
from devkit.kafka_node import KafkaNode
from devkit.kafka_node_config import DEFAULT_USERS
from devkit.processes import free_port
from envelope import kafka_uuid
from proxy.net.sasl.login_modules import plain_jaas
from tests.integration.conftest import audit_records
from tests.interop.test_kafka_tools import _classpath, _run
from tests.interop.upstreams import Target, kafka_target

pytestmark = pytest.mark.interop
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
NEW_CONTROLLER_ID = 3000


@pytest.fixture
async def target(kafka_node: KafkaNode, nursery: Any, tmp_path: Path) -> Target:
    return await kafka_target(nursery, kafka_node, tmp_path / "audit")


def _new_controller(directory: Path, cluster_id: str) -> tuple[Path, str]:
    """A controller's configuration (also the tool's client settings, as the tool reads both from one file) and its
    formatted, never-started metadata directory; and its directory id."""
    metadata = directory / "new-controller-metadata"
    metadata.mkdir()
    directory_id = kafka_uuid.random_text()
    (metadata / "meta.properties").write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={NEW_CONTROLLER_ID}\ndirectory.id={directory_id}\n")
    jaas = plain_jaas(username="admin", password=DEFAULT_USERS["admin"])
    config = directory / "new-controller.properties"
    config.write_text(
        "\n".join(
            [
                "process.roles=controller",
                f"node.id={NEW_CONTROLLER_ID}",
                "controller.listener.names=CONTROLLER",
                f"listeners=CONTROLLER://127.0.0.1:{free_port()}",
                "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT",
                f"metadata.log.dir={metadata}",
                "security.protocol=SASL_PLAINTEXT",
                "sasl.mechanism=PLAIN",
                f"sasl.jaas.config={jaas}",
                "",
            ]
        )
    )
    return config, directory_id


def _quorum_tool(bootstrap: str, config: Path, *args: str) -> tuple[int, str]:
    done = _run([*java_command(_classpath()), QUORUM, "--bootstrap-server", bootstrap, "--command-config", str(config), *args], config.parent)
    # the last line names the exception and the leader's message; earlier ones are log noise
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip() and not line.startswith(("SLF4J", "\tat "))]
    return done.returncode, lines[-1] if lines else ""


async def test_add_and_remove_controller_through_the_proxy_as_through_a_broker(target: Target, kafka_node: KafkaNode, tmp_path: Path) -> None:
    config, directory_id = _new_controller(tmp_path, kafka_node.cluster_id)

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for where, bootstrap in (("proxy", target.address), ("broker", kafka_node.broker_address)):
            seen[f"add-controller via {where}"] = _quorum_tool(bootstrap, config, "add-controller")
            seen[f"remove-controller via {where}"] = _quorum_tool(
                bootstrap, config, "remove-controller", "--controller-id", str(NEW_CONTROLLER_ID), "--controller-directory-id", directory_id
            )
        return seen

    seen = await trio.to_thread.run_sync(work)
    for command in ("add-controller", "remove-controller"):
        via_proxy, via_broker = seen[f"{command} via proxy"], seen[f"{command} via broker"]
        assert via_proxy == via_broker, seen
        assert via_proxy[0] != 0, seen  # the leader refused it: nothing changed in the shared quorum
    # the leader's own words: it tried to reach the new controller, and found no such voter to remove
    assert "Aborted add voter operation" in seen["add-controller via proxy"][1]
    assert "VoterNotFoundException" in seen["remove-controller via proxy"][1] and directory_id in seen["remove-controller via proxy"][1]
    methods = {(d["methodName"], d["stage"], d["authenticationInfo"]["principal"]) for d in (r["data"] for r in audit_records(tmp_path / "audit"))}
    assert {(m, s, "User:admin") for m in ("kafka.AddRaftVoter", "kafka.RemoveRaftVoter") for s in ("intent", "outcome")} <= methods
