"""controller/kafka_configs.json is what Kafka's own classes say: regenerated from the cached jars, it is the same file."""

import os
import shutil
import sys
from pathlib import Path

import pytest

from devkit.kafka_jars import ensure_kafka_jars
from devkit.tooling import ToolingMissing

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_definitions_are_what_the_kafka_jars_give() -> None:
    try:
        ensure_kafka_jars()
    except ToolingMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    if shutil.which("javac") is None:
        pytest.skip("javac is needed to compile tools/kafka_configs/KafkaConfigsDump.java")
    sys.path.insert(0, str(ROOT / "tools" / "kafka_configs"))
    try:
        import generate  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    assert generate.render(generate.dump()) == generate.TARGET.read_text(), "run tools/kafka_configs/generate.py"
