"""The outcome's one-pass scan of an answer (envelope/answer_scan.py) against the full decode it stands in for.

The full decode (bounded pre-pass, then kio, then authz/admin_apis.py's `results` readers) is the oracle: for every
forwarded API and served version, on valid answers and on the fuzzer's mutations of them, the scan either gives what
the full decode gives or gives up (None), and gives up on nothing the full decode refuses.
"""

import random
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from authz.admin_apis import SERVED_ADMIN_APIS, answer_scan
from envelope.answer_scan import scan_answer
from envelope.apis import ApiKey
from envelope.bounded_plan import plan_of
from envelope.build import build_entity
from envelope.codec import encode_response, known_versions, response_schema
from envelope.errors import ProtocolError
from envelope.responses import ResourceError
from envelope.served import pinned_ranges
from fuzz.generate import body
from fuzz.mutate import mutate
from fuzz.targets import _response_prefix
from proxy.forward.forwarding import answer_errors, decoded_response_errors

SERVED = pinned_ranges(SERVED_ADMIN_APIS)
VERSIONS = [(api_key, version) for api_key, served in sorted(SERVED.items()) for version in range(served.min, served.max + 1)]
SCANNED = [(api_key, version) for api_key, version in VERSIONS if answer_scan(api_key, version) is not None]
EXAMPLES = 60


def _oracle(api_key: int, version: int, frame: bytes) -> tuple[int, list[ResourceError]] | ProtocolError:
    try:
        return decoded_response_errors(api_key, version, frame)
    except ProtocolError as exc:
        return exc


def _agrees(api_key: int, version: int, frame: bytes) -> bool:
    """The scan gave an answer (it did not give up); it is the full decode's. The combined path is the full decode's too."""
    oracle = _oracle(api_key, version, frame)
    plan = answer_scan(api_key, version)
    scanned = None if plan is None else scan_answer(plan, frame)
    if scanned is not None:
        assert not isinstance(oracle, ProtocolError), f"the scan read what the full decode refuses: {oracle}"
        assert scanned == oracle
    if isinstance(oracle, ProtocolError):
        with pytest.raises(ProtocolError):
            answer_errors(api_key, version, frame)
    else:
        assert answer_errors(api_key, version, frame) == oracle
    return scanned is not None


def test_every_api_with_per_resource_results_or_a_top_code_is_scanned() -> None:
    unscanned = {api_key for api_key, version in VERSIONS if answer_scan(api_key, version) is None}
    # Results named from several fields (quota entities) or nested per partition, and UpdateFeatures' results that
    # only some answers carry: decoded fully.
    assert unscanned == {ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.DESCRIBE_QUORUM, ApiKey.UPDATE_FEATURES}
    assert len(SCANNED) > len(VERSIONS) // 2


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_valid_answers_scan_as_they_decode(api_key: int, version: int, seed: int) -> None:
    rng = random.Random(seed)
    generated = body(plan_of(response_schema(api_key, version)), rng)
    frame = _response_prefix(api_key, version) + bytes(generated.out)
    scanned = _agrees(api_key, version, frame)
    if (api_key, version) in SCANNED and "ü".encode() not in frame and b"\x80" not in frame:
        assert scanned, "a plain valid answer is the scan's to read"


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_answers_scan_as_they_decode_or_are_left_to_it(api_key: int, version: int, seed: int) -> None:
    rng = random.Random(seed)
    generated = body(plan_of(response_schema(api_key, version)), rng)
    _agrees(api_key, version, mutate(_response_prefix(api_key, version), generated, rng))


def _kafka_create_topics_answer(version: int, topics: int, configs: int, *, failed: bool = False) -> bytes:
    """What a Kafka controller answers to CreateTopics v5+ (KIP-525): each topic with its configs."""
    entries = [
        {"name": f"config.{index}", "value": f"value-{index}", "read_only": False, "config_source": 5, "is_sensitive": index == 3}
        for index in range(configs)
    ]
    code = ErrorCode.topic_already_exists if failed else ErrorCode.none
    message = "Topic 'orders-0' already exists." if failed else None
    values = {
        "throttle_time": 0,
        "topics": [
            {"name": f"orders-{n}", "topic_id": uuid.uuid4(), "error_code": code, "error_message": message, "num_partitions": 3, "replication_factor": 1, "configs": entries}
            for n in range(topics)
        ],
    }
    return encode_response(build_entity(response_schema(19, version), values), correlation_id=7)


@pytest.mark.parametrize("version", range(5, 8))
@pytest.mark.parametrize("failed", [False, True])
def test_kafkas_create_topics_answer_is_read_in_one_pass(version: int, failed: bool) -> None:
    frame = _kafka_create_topics_answer(version, topics=3, configs=40, failed=failed)
    plan = answer_scan(19, version)
    assert plan is not None
    scanned = scan_answer(plan, frame)
    assert scanned is not None and scanned == decoded_response_errors(19, version, frame)
    assert [r.resource for r in scanned[1]] == ["orders-0", "orders-1", "orders-2"]


def _with_values(api_key: int, version: int, values: dict[str, Any]) -> bytes:
    return encode_response(build_entity(response_schema(api_key, version), {"throttle_time": 0, **values}), correlation_id=7)


@pytest.mark.parametrize(
    ("api_key", "values", "results"),
    [
        (20, {"responses": [{"name": "gone", "topic_id": uuid.UUID(int=1), "error_code": ErrorCode.unknown_topic_or_partition, "error_message": "ü"}]}, [("gone", 3, "ü")]),
        (30, {"results": [{"error_code": ErrorCode.none, "error_message": None}, {"error_code": ErrorCode.invalid_request, "error_message": "x"}]}, [("acl", 0, None), ("acl", 42, "x")]),
        (44, {"responses": [{"error_code": ErrorCode.invalid_config, "error_message": "bad", "resource_type": 2, "resource_name": "t"}]}, [("t", 40, "bad")]),
    ],
)
def test_results_are_named_coded_and_explained_as_the_decoders_read_them(api_key: int, values: dict[str, Any], results: list[tuple[str, int, str]]) -> None:
    found = known_versions(api_key)
    assert found is not None
    version = min(SERVED[api_key].max, found[1])
    frame = _with_values(api_key, version, values)
    plan = answer_scan(api_key, version)
    assert plan is not None
    scanned = scan_answer(plan, frame)
    assert scanned == decoded_response_errors(api_key, version, frame)
    assert scanned is not None and [(r.resource, r.error_code, r.message) for r in scanned[1]] == results
