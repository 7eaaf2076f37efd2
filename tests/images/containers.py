"""Running the built images with the container engine (tools/container/engine), for tests/images.

`make image` builds the images; these helpers only run, inspect and stop containers. Without an engine or
without the images the tests skip with a message saying why, and fail when CI=true on a machine where the
engine could have been installed (root with apt-get, as `make image-tools` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from devkit.processes import skip_or_fail
from tests.deploy.deploy_files import ROOT

ENGINE = str(ROOT / "tools" / "container" / "engine")
_VERSION = next(line.split('"')[1] for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.startswith("version = "))
PROXY_IMAGE = os.environ.get("PROXY_IMAGE", f"localhost/kafka-envelope-proxy:{_VERSION}")
AUDIT_IMAGE = os.environ.get("AUDIT_IMAGE", f"localhost/kafka-envelope-proxy-audit:{_VERSION}")


def engine(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"engine {' '.join(args[:3])}... exited {result.returncode}: {result.stderr.strip()}")
    return result


#: how a skipped image test starts its reason, so that it stands out in the summary
NOT_RUN = "IMAGE TESTS NOT RUN: "


def _could_install_engine() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def require_images() -> None:
    """Skip (loudly) without an engine or without the built images; fail instead when CI=true and they could exist
    (the engine only on a machine where `make image-tools` could have installed podman)."""
    if engine("--version", check=False).returncode != 0:
        message = "no container engine (podman or docker); `make image-tools` installs podman as root"
        skip_or_fail(f"{NOT_RUN}{message}", required=_could_install_engine())
    for image in (PROXY_IMAGE, AUDIT_IMAGE):
        if engine("image", "inspect", image, check=False).returncode != 0:
            skip_or_fail(f"{NOT_RUN}image {image} not built: run `make image` (or `make image-test`)")


def inspect(name: str) -> dict[str, Any]:
    (data,) = json.loads(engine("inspect", name).stdout)
    assert isinstance(data, dict)
    return data


def health_status(name: str) -> str:
    state = inspect(name)["State"]
    health = state.get("Health") or state.get("Healthcheck") or {}
    return str(health.get("Status", ""))


def http_status(url: str, timeout: float = 3) -> int:
    """The status of a GET, or 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def wait_until(what: str, condition: Any, deadline: float, interval: float = 0.5) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {deadline} s")


@dataclass
class Container:
    """A detached container of the tests; `remove()` stops it (if running) and deletes it with its logs printed."""

    name: str

    def logs(self) -> str:
        result = engine("logs", self.name, check=False)
        return result.stdout + result.stderr

    def running(self) -> bool:
        return bool(inspect(self.name)["State"].get("Running"))

    def exit_code(self) -> int:
        return int(inspect(self.name)["State"]["ExitCode"])

    def remove(self) -> None:
        engine("kill", self.name, check=False, timeout=60)
        engine("rm", "--force", self.name, check=False, timeout=60)


def run_detached(name: str, options: list[str], image: str, command: list[str] | None = None) -> Container:
    engine("rm", "--force", name, check=False)
    engine("run", "--detach", "--name", name, *options, image, *(command or []))
    return Container(name)
