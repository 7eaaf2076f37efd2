"""docs/deploy.md's host path with the proxy in its image (tests/deploy/guide_run.py says how it is run)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tests.deploy.guide_run import check_the_walkthrough, kafka_lib, run_guide

pytestmark = pytest.mark.interop
__all__ = ["kafka_lib"]  # a fixture


def test_the_host_path_in_a_container(kafka_lib: Path, tmp_path: Path) -> None:
    from tests.images.containers import PROXY_IMAGE, engine, require_images

    require_images()
    if os.geteuid() != 0:
        pytest.skip("the guide runs the proxy's container as root (it hands files to uid 10001)")
    name = f"guide-proxy-{uuid.uuid4().hex[:8]}"
    tmp_path.chmod(0o755)  # uid 10001 reaches the mounted folders
    try:
        with run_guide("container", tmp_path, kafka_lib, PROXY_IMAGE=PROXY_IMAGE, PROXY_CONTAINER=name) as run:
            check_the_walkthrough(run)
            assert "active controller: 1@127.0.0.1:" in (run.workdir / "proxy.log").read_text()
    finally:
        engine("rm", "-f", name, check=False)
