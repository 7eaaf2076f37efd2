"""The scripted Kafka node works, and its controller speaks what the proxy needs (Envelope, API key 58)."""

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from devkit import wire
from devkit.kafka_node import KafkaNode
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from envelope.principal import Principal
from envelope.wrap import unwrap, wrap

pytestmark = pytest.mark.interop


def _wait_all(futures: dict[str, Any]) -> None:
    for future in futures.values():
        future.result()


def test_admin_creates_and_deletes_a_topic_over_sasl_plain(kafka_node: KafkaNode) -> None:
    admin = AdminClient(kafka_node.client_config("admin"))
    _wait_all(admin.create_topics([NewTopic("interop-topic", num_partitions=2, replication_factor=1)], request_timeout=30))
    topics = admin.list_topics(timeout=30).topics
    assert "interop-topic" in topics and len(topics["interop-topic"].partitions) == 2

    _wait_all(admin.delete_topics(["interop-topic"], request_timeout=30))
    for _ in range(50):
        if "interop-topic" not in admin.list_topics(timeout=30).topics:
            break
        time.sleep(0.2)
    assert "interop-topic" not in admin.list_topics(timeout=30).topics


def test_bob_without_acls_is_denied(kafka_node: KafkaNode) -> None:
    bob = AdminClient(kafka_node.client_config("bob"))
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        _wait_all(bob.create_topics([NewTopic("bob-topic", num_partitions=1, replication_factor=1)], request_timeout=30))


def test_controller_listener_advertises_envelope_to_the_proxy_user(kafka_node: KafkaNode) -> None:
    with wire.connect(kafka_node.controller_address) as sock:
        assert wire.sasl_plain_login(sock, "proxy", kafka_node.users["proxy"]) == 0
        body = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "interop-test", "client_software_version": "1"}, correlation_id=3)
    assert int(body.error_code) == 0
    versions = {int(api.api_key): (int(api.min_version), int(api.max_version)) for api in body.api_keys}
    assert ApiKey.ENVELOPE in versions, f"controller APIs: {sorted(versions)}"
    assert versions[ApiKey.ENVELOPE][0] == 0
    assert ApiKey.CREATE_TOPICS in versions


def _envelope_create(node: KafkaNode, login: str, principal: str, topic: str) -> tuple[int, int | None]:
    """(envelope error, inner CreateTopics error) of a CreateTopics v7 for `principal`, sent in an Envelope as `login`."""
    inner = wire.request(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 30000,
            "validate_only": False,
        },
        correlation_id=4242,
    )
    with wire.connect(node.controller_address, timeout=60) as sock:
        assert wire.sasl_plain_login(sock, login, node.users[login]) == 0
        error, data = unwrap(wire.exchange(sock, wrap(inner, Principal.parse(principal), "127.0.0.1", correlation_id=9)))
    if data is None:
        return error, None
    correlation_id, response = decode_response_body(ApiKey.CREATE_TOPICS, 7, data)
    assert correlation_id == 4242
    (result,) = response.topics
    return error, int(result.error_code)


def test_proxy_holding_cluster_action_by_acl_forwards_envelopes(kafka_node_acl: KafkaNode) -> None:
    assert "User:proxy" not in kafka_node_acl.server_properties()["super.users"]
    # User:proxy (ClusterAction by ACL) forwards for User:admin (super user): accepted, and the topic is created
    assert _envelope_create(kafka_node_acl, "proxy", "User:admin", "enveloped") == (0, 0)
    # ... for User:alice (no ACLs): the envelope is accepted, the inner request is denied as alice
    assert _envelope_create(kafka_node_acl, "proxy", "User:alice", "enveloped-alice") == (0, 29)
    # User:bob lacks ClusterAction: the controller refuses the envelope itself (CLUSTER_AUTHORIZATION_FAILED)
    assert _envelope_create(kafka_node_acl, "bob", "User:admin", "enveloped-bob") == (31, None)
