"""The embedded controller keeps its image across kill -9: every acknowledged change is there after restart."""

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from controller.image import MetadataImage, StoredScramCredential, Topic
from controller.persistence import MetadataStore, MetadataStoreError
from devkit import wire
from devkit.processes import free_port, start_server, stop_process, wait_for_port, write_properties
from envelope_proxy.embedded import DEFAULT_USERS, client_config, controller_properties, proxy_properties

TIMEOUT = 30


def test_acknowledged_changes_survive_kill_9(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    controller_port, proxy_port = free_port(), free_port()
    props = {**controller_properties(port=controller_port), "metadata.log.dir": str(tmp_path / "metadata")}
    controller_file = write_properties(tmp_path / "controller.properties", props)
    proxy_props = proxy_properties(controller_port, tmp_path / "audit")
    proxy_props["listeners"] = f"CLIENT://127.0.0.1:{proxy_port}"
    proxy_props["listener.security.protocol.map"] = "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    proxy_file = write_properties(tmp_path / "proxy.properties", proxy_props)
    grant = AclBinding(
        ResourceType.TOPIC, "kept-", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
    )

    controller = start_server(["controller", "--config", str(controller_file)], tmp_path / "controller-1.log")
    proxy = start_server(["run", "--config", str(proxy_file)], tmp_path / "proxy.log")
    try:
        wait_for_port(controller_port, controller)
        wait_for_port(proxy_port, proxy)
        admin = AdminClient(client_config(f"127.0.0.1:{proxy_port}", "admin"))
        for future in admin.create_topics([NewTopic(f"kept-{i}", 1, 1) for i in range(5)]).values():
            future.result(timeout=TIMEOUT)
        for future in admin.create_partitions([NewPartitions("kept-0", 4)]).values():
            future.result(timeout=TIMEOUT)
        setting = ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
        for future in admin.incremental_alter_configs([ConfigResource("TOPIC", "kept-1", incremental_configs=[setting])]).values():
            future.result(timeout=TIMEOUT)
        admin.create_acls([grant])[grant].result(timeout=TIMEOUT)
        for future in admin.delete_topics(["kept-4"]).values():
            future.result(timeout=TIMEOUT)
        scram = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-secret")
        for future in admin.alter_user_scram_credentials([scram]).values():
            future.result(timeout=TIMEOUT)
        assert _quota_call(proxy_port, 49, {"entries": [_QUOTA_ENTRY], "validate_only": False}).entries[0].error_code == 0

        controller.send_signal(signal.SIGKILL)  # no shutdown hook runs
        controller.wait(10)
        controller = start_server(["controller", "--config", str(controller_file)], tmp_path / "controller-2.log")
        wait_for_port(controller_port, controller)

        topics = admin.list_topics(timeout=TIMEOUT).topics
        (configs,) = admin.describe_configs([ConfigResource("TOPIC", "kept-1")]).values()
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
        acls = admin.describe_acls(everything).result(timeout=TIMEOUT)
        seen = {
            "topics": sorted(name for name in topics if name.startswith("kept-")),
            "kept-0 partitions": len(topics["kept-0"].partitions),
            "kept-1 retention": configs.result(timeout=TIMEOUT)["retention.ms"].value,
            "acls": [(b.name, b.principal, b.operation.name) for b in acls],
            "scram": {
                user: [(info.mechanism.name, info.iterations) for info in description.scram_credential_infos]
                for user, future in admin.describe_user_scram_credentials(["carol"]).items()
                for description in [future.result(timeout=TIMEOUT)]
            },
            "quotas": [
                # Kafka lists an entity's quotas in its HashMap's order: compare them sorted.
                ([(e.entity_type, e.entity_name) for e in entry.entity], sorted((v.key, v.value) for v in entry.values))
                for entry in _quota_call(proxy_port, 48, {"components": [], "strict": False}).entries
            ],
        }
    finally:
        stop_process(proxy)
        stop_process(controller)
    assert seen == {
        "topics": ["kept-0", "kept-1", "kept-2", "kept-3"],
        "kept-0 partitions": 4,
        "kept-1 retention": "86400000",
        "acls": [("kept-", "User:alice", "READ")],
        "scram": {"carol": [("SCRAM_SHA_512", 8192)]},
        "quotas": [([("user", "carol")], [("consumer_byte_rate", 2048.0), ("producer_byte_rate", 1024.0)])],
    }


_QUOTA_ENTRY = {
    "entity": [{"entity_type": "user", "entity_name": "carol"}],
    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}, {"key": "consumer_byte_rate", "value": 2048.0, "remove": False}],
}


def _quota_call(proxy_port: int, api_key: int, values: dict[str, Any]) -> Any:
    """Client quotas through the proxy as admin (confluent-kafka has no quota API)."""
    with wire.connect(f"127.0.0.1:{proxy_port}", timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
        return wire.call(sock, api_key, 1, values, correlation_id=3)


def test_quotas_credentials_features_and_reassignments_round_trip(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    image = MetadataImage()
    image.topics["t"] = Topic("t", uuid.uuid4(), 2, 1, {}, {1: [3, 1]})
    image.quotas[(("client-id", None), ("user", "alice"))] = {"request_percentage": 12.5}
    image.scram_credentials["alice"] = {"SCRAM-SHA-256": StoredScramCredential(b"salt", b"salted-password", 4096)}
    image.finalized_features = {"metadata.version": 27, "group.version": 1}
    store.save(image, [])
    restored = MetadataImage()
    MetadataStore(tmp_path).load(restored)
    assert (restored.topics, restored.quotas, restored.scram_credentials, restored.finalized_features) == (
        image.topics,
        image.quotas,
        image.scram_credentials,
        image.finalized_features,
    )
    assert b"salted-password" not in (tmp_path / "metadata.json").read_bytes()  # stored base64, never as given


def test_a_torn_write_is_ignored_and_a_damaged_image_is_a_clear_error(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    image = MetadataImage()
    image.topics["t"] = Topic("t", uuid.uuid4(), 2, 1, {"cleanup.policy": "compact"})
    store.save(image, [])
    (tmp_path / ".metadata.json.abc.tmp").write_text('{"version": 1, "topics": {')  # crash before the rename
    restored = MetadataImage()
    assert MetadataStore(tmp_path).load(restored) == []
    assert restored.topics["t"].configs == {"cleanup.policy": "compact"} and restored.topics["t"].partitions == 2
    assert not list(tmp_path.glob("*.tmp"))

    (tmp_path / "metadata.json").write_text(json.dumps({"version": 1, "topics": {"t": {"id": "not-a-uuid"}}}))
    with pytest.raises(MetadataStoreError, match=r"metadata.json: not a metadata image"):
        MetadataStore(tmp_path).load(MetadataImage())
