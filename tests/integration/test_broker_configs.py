"""Broker configs for every broker id the proxy lists (docs/clients.md, "one broker view"), each from that broker."""

from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from controller.config import parse_controller_config
from controller.server import EmbeddedController
from devkit import wire
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_TOPIC
from envelope_proxy.embedded import DEFAULT_USERS, controller_properties, proxy_properties, start_proxy
from proxy.config import parse_proxy_config

TIMEOUT = 60


def _describe(address: str, resources: list[tuple[int, str]], version: int = 4) -> list[Any]:
    values = {
        "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None} for kind, name in resources],
        "include_synonyms": False,
        "include_documentation": False,
    }
    with wire.connect(address, timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
        brokers = wire.call(sock, ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        answer = wire.call(sock, ApiKey.DESCRIBE_CONFIGS, version, values)
        return [[int(b.node_id) for b in brokers.brokers], *answer.results]


def _alter_broker(address: str, broker: str, name: str, value: str) -> int:
    values = {
        "resources": [{"resource_type": CONFIG_BROKER, "resource_name": broker, "configs": [{"name": name, "config_operation": 0, "value": value}]}],
        "validate_only": False,
    }
    with wire.connect(address, timeout=TIMEOUT) as sock:
        assert wire.sasl_plain_login(sock, "admin", DEFAULT_USERS["admin"]) == 0
        return int(wire.call(sock, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, values).responses[0].error_code)


async def test_each_listed_broker_answers_for_its_own_configs(tmp_path: Path) -> None:
    """Three brokers behind one embedded controller, read through a read upstream named `localhost`, so brokers other
    than the one the proxy reads from are asked over connections of their own; a per-broker setting made on broker 2
    shows on broker 2 alone, and an id outside the list gets the broker's own Kafka error."""
    with trio.fail_after(TIMEOUT * 2):
        async with trio.open_nursery() as nursery:
            controller = EmbeddedController(parse_controller_config({**controller_properties(), "embedded.broker.count": "3"}))
            port = (await nursery.start(controller.run))[0].port
            raw = {**proxy_properties(port, tmp_path), "read.bootstrap.servers": f"localhost:{port}"}
            run = await start_proxy(nursery, parse_proxy_config(raw))
            address = run.running.address("CLIENT")
            assert await trio.to_thread.run_sync(_alter_broker, address, "2", "log.cleaner.threads", "3") == 0

            asked = [(CONFIG_BROKER, "1"), (CONFIG_BROKER, "2"), (CONFIG_TOPIC, "absent"), (CONFIG_BROKER, "3"), (CONFIG_BROKER_LOGGER, "2"), (CONFIG_BROKER, "7"), (CONFIG_BROKER, "")]
            listed, *results = await trio.to_thread.run_sync(_describe, address, asked)
            assert listed == [1, 2, 3]
            assert [(int(r.resource_type), r.resource_name) for r in results] == asked
            by_name = {(int(r.resource_type), r.resource_name): r for r in results}
            for broker in ("1", "2", "3"):
                assert by_name[(CONFIG_BROKER, broker)].error_code == 0, by_name[(CONFIG_BROKER, broker)].error_message
                assert len(by_name[(CONFIG_BROKER, broker)].configs) > 100
            threads = {b: {c.name: c.value for c in by_name[(CONFIG_BROKER, b)].configs}["log.cleaner.threads"] for b in ("1", "2", "3")}
            assert threads == {"1": "1", "2": "3", "3": "1"}
            assert by_name[(CONFIG_BROKER_LOGGER, "2")].error_code == 0
            outside = by_name[(CONFIG_BROKER, "7")]
            assert (outside.error_code, outside.error_message) == (ErrorCode.invalid_request, "Unexpected broker id, expected 1 or empty string, but received 7")
            nursery.cancel_scope.cancel()
