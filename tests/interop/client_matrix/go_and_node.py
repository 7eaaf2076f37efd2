"""The workflow in franz-go's kadm (Go) and in kafkajs (Node), each a program beside this file, made once per
machine by devkit/client_tools.py (`make client-matrix-tools`).

Each run prints one JSON object, step -> outcome, as its last line (the same arguments as AdminWorkflow.java).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from devkit.client_tools import KAFKAJS, kadm_program, kafkajs_modules, tool
from tests.interop.client_matrix.workflow import WorkflowSpec

RUN_TIMEOUT = 300.0


class ClientRunFailed(AssertionError):
    """The client crashed, hung, or printed what the matrix cannot read; the message names it."""


def _workflow(command: list[str], spec: WorkflowSpec, name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    args = [spec.bootstrap, *spec.admin, *spec.outsider, spec.topic, ",".join(spec.steps)]
    try:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        raise ClientRunFailed(f"{name} hung for {RUN_TIMEOUT:.0f}s") from exc
    if done.returncode != 0:
        raise ClientRunFailed(f"{name} exited with {done.returncode}: {done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise ClientRunFailed(f"{name} printed nothing: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def kadm_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    return _workflow([str(kadm_program())], spec, "franz-go's kadm")


def kafkajs_workflow(spec: WorkflowSpec) -> dict[str, Any]:
    node = tool("node", "the client matrix runs its kafkajs client with Node.js 14+")
    env = {**os.environ, "NODE_PATH": str(kafkajs_modules())}
    return _workflow([node, str(KAFKAJS / "workflow.js")], spec, "kafkajs", env)


__all__ = ["ClientRunFailed", "kadm_program", "kadm_workflow", "kafkajs_modules", "kafkajs_workflow"]
