"""The differential suite: every scenario in differential_scenarios.py, sent raw through a proxy in front of
the embedded controller and through one in front of a real Kafka 4.3.1 controller; the answers must agree.

Each group installs its ACLs as admin (and waits until the real controller
decides with them), runs its calls in order as admin, alice, bob or mallory,
from 127.0.0.1 or another loopback address, and removes what it made. Names
carry a per-run prefix, so the shared Kafka node's other tenants are not touched.
`DIFFERENTIAL_REPORT=path` writes every difference as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkit.kafka_node import KafkaNode
from tests.audit_records import assert_valid, records_under
from tests.interop.differential import Difference, Group, Side, run_group, running_sides
from tests.interop.differential_scenarios import GROUPS

pytestmark = pytest.mark.interop

_TALLY: dict[str, tuple[int, list[Difference]]] = {}


@pytest.fixture(scope="module")
def sides(kafka_node: KafkaNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    began = time.monotonic()
    workdir = tmp_path_factory.mktemp("differential")
    with running_sides(kafka_node, workdir) as running:
        yield running
    assert_valid(records_under(workdir))  # every audit record both proxies wrote, odd requests included
    scenarios = sum(count for count, _ in _TALLY.values())
    differing = sum(len(found) for _, found in _TALLY.values())
    summary = f"differential suite: {scenarios} scenarios in {len(_TALLY)} groups, {scenarios - differing} agree, {differing} differ ({time.monotonic() - began:.1f}s)"
    print(f"\n{summary}", file=sys.stderr)
    report = os.environ.get("DIFFERENTIAL_REPORT")
    if report:
        Path(report).write_text(
            json.dumps(
                {"summary": summary, "differences": [{"group": d.group, "call": d.call, "embedded": d.embedded, "kafka": d.kafka} for _, found in _TALLY.values() for d in found]},
                indent=1,
                default=str,
            )
        )


def test_there_are_enough_scenarios() -> None:
    assert sum(len(group.calls) for group in GROUPS) >= 150


@pytest.mark.parametrize("group", GROUPS, ids=[group.name for group in GROUPS])
def test_the_embedded_controller_answers_as_kafka(sides: tuple[Side, Side], group: Group) -> None:
    count, differences = run_group(sides, group, f"dc{uuid.uuid4().hex[:6]}-")
    _TALLY[group.name] = (count, differences)
    assert not differences, f"{len(differences)} of {count} scenarios differ:\n" + "\n".join(map(str, differences))
