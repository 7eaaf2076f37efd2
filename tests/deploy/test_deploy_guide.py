"""docs/deploy.md's host path with the proxy as a process (tests/deploy/guide_run.py says how it is run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.deploy.guide_blocks import host_path_blocks
from tests.deploy.guide_run import PORTS, check_the_walkthrough, kafka_lib, run_guide

pytestmark = pytest.mark.interop
__all__ = ["kafka_lib"]  # a fixture


def test_the_guide_marks_a_whole_host_path() -> None:
    """Each variant starts and stops the proxy, and the common blocks do the rest (a marker lost in an edit shows here)."""
    blocks = host_path_blocks()
    common = "\n".join(block.code for block in blocks if block.variant is None)
    for needed in ("export WORKDIR=", "envelope-proxy certs", "scram add-user", "cat > server.properties", "cat > proxy.properties"):
        assert needed in common, f"no host-path block with {needed!r}"
    for needed in ("kafka.tools.StorageTool format", "AclCommand --bootstrap-controller", "as_user alice", "envelope-proxy audit"):
        assert needed in common, f"no host-path block with {needed!r}"
    for variant, start, stop in (("process", "envelope-proxy run", "kill -TERM"), ("container", 'engine" run -d', 'engine" stop')):
        code = "\n".join(block.code for block in blocks if block.variant == variant)
        assert start in code and stop in code, f"the {variant} variant does not start and stop the proxy"
    # the guide defines every variable the test sets, so that the test substitutes nothing else
    for name in ("REPO", "WORKDIR", "VENV", "KAFKA_LIB", *PORTS, "PROXY_IMAGE", "PROXY_CONTAINER"):
        assert re.search(rf'^export {name}="\$\{{{name}:-', blocks[0].code, re.M), f"the first block does not define {name}"


def test_the_host_path_as_a_process(kafka_lib: Path, tmp_path: Path) -> None:
    with run_guide("process", tmp_path, kafka_lib) as run:
        check_the_walkthrough(run)
        proxy_log = (run.workdir / "proxy.log").read_text()
        assert "active controller: 1@127.0.0.1:" in proxy_log, proxy_log[-3000:]
