"""Readers for the files under deploy/, shared by the offline checks in this folder.

Nothing here talks to a network: manifests are read with PyYAML, Containerfiles with a small
instruction parser, PromQL with a tokenizer that is just good enough to find series names.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from envelope_proxy.dev_pki import DevPki, generate_dev_pki
from proxy.net.sasl.credentials import add_user
from proxy.properties import load_properties

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
PROMETHEUS = DEPLOY / "prometheus"
GRAFANA = DEPLOY / "grafana"
SYSTEMD = DEPLOY / "systemd"
CONTAINER = DEPLOY / "container"


# --------------------------------------------------------------------------- tools


def require_tool(name: str, why: str) -> str:
    """The path of an executable; skip without it, but fail when CI=true (as the kcat test does)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} not installed ({why}; `make tools` installs it as root)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}: required when CI=true")
        pytest.skip(message)
    return path


def run(command: list[str], *, cwd: Path | None = None, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)


# --------------------------------------------------------------------------- Kubernetes manifests


def manifest_files() -> list[Path]:
    return sorted(KUBERNETES.glob("*.yaml"))


def load_documents(path: Path) -> list[dict[str, Any]]:
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in documents:
        assert isinstance(doc, dict), f"{path.name}: a document is not a mapping: {doc!r}"
    return documents


def find(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for doc in documents:
        if doc.get("kind") == kind and doc.get("metadata", {}).get("name") == name:
            return doc
    raise AssertionError(f"no {kind} named {name!r}")


def pod_template(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template of a workload (Deployment, StatefulSet, CronJob, ...), else None."""
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        template: dict[str, Any] = doc["spec"]["template"]
        return template
    if kind == "CronJob":
        template = doc["spec"]["jobTemplate"]["spec"]["template"]
        return template
    if kind == "Pod":
        return {"metadata": doc["metadata"], "spec": doc["spec"]}
    return None


def all_containers(pod_spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from pod_spec.get("initContainers", [])
    yield from pod_spec.get("containers", [])


# --------------------------------------------------------------------------- Containerfiles


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str  # upper-cased
    arguments: str


def parse_containerfile(text: str) -> list[Instruction]:
    """Instructions with `\\` continuations joined and comment lines dropped (Dockerfile syntax, no heredocs)."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are removed, as Docker does
        if not pending:
            start = number
        continued = stripped.endswith("\\")
        pending.append(stripped[:-1] if continued else stripped)
        if not continued:
            joined = " ".join(part.strip() for part in pending if part.strip())
            keyword, _, arguments = joined.partition(" ")
            instructions.append(Instruction(start, keyword.upper(), arguments.strip()))
            pending = []
    if pending:
        raise AssertionError(f"line {start}: the file ends inside a continued instruction")
    return instructions


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    starts = [i for i, ins in enumerate(instructions) if ins.keyword == "FROM"]
    assert starts, "no FROM instruction"
    return instructions[starts[-1] :]


# --------------------------------------------------------------------------- PromQL

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "atan2", "inf", "nan"}
)
_GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_AGGREGATIONS = frozenset("sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio".split())
_TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)(?:[smhdwy]|ms)*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<open>[{(\[])
  | (?P<close>[})\]])
  | (?P<space>\s+)
  | (?P<other>.)
    """,
    re.VERBOSE,
)


def promql_metric_names(expr: str) -> set[str]:
    """Series names an expression selects: identifiers that are not functions, keywords, label names or labels in by()/on()."""
    tokens = [(m.lastgroup or "", m.group()) for m in _TOKEN.finditer(expr) if m.lastgroup != "space"]
    names: set[str] = set()
    depth_skip = 0  # >0 while inside {...} matchers, [...] ranges or a by(...)-style label list
    closing: list[str] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if depth_skip:
            if kind == "open":
                closing.append(text)
                depth_skip += 1
            elif kind == "close":
                closing.pop()
                depth_skip -= 1
            i += 1
            continue
        if kind == "open" and text in "{[":
            depth_skip, closing = 1, [text]
        elif kind == "ident":
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
            lowered = text.lower()
            if lowered in _GROUPING:
                if nxt == ("open", "("):
                    depth_skip, closing = 1, ["("]
                    i += 1
            elif lowered in _KEYWORDS:
                pass
            elif nxt == ("open", "("):
                pass  # a function or aggregation
            elif lowered in _AGGREGATIONS and nxt[0] == "ident" and nxt[1].lower() in ("by", "without"):
                pass  # `sum by (label) (...)`
            else:
                names.add(text)
        i += 1
    return names


def grafana_expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target (rows included), Prometheus annotation and query variable."""
    found: list[tuple[str, str]] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            for target in panel.get("targets", []):
                found.append((f"panel {panel.get('id')} {panel.get('title')!r} target {target.get('refId')}", target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for annotation in dashboard.get("annotations", {}).get("list", []):
        if annotation.get("datasource", {}).get("type") == "prometheus":
            found.append((f"annotation {annotation.get('name')!r}", annotation["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable["query"]
        text = query["query"] if isinstance(query, dict) else query
        match = re.fullmatch(r"\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*", text)
        found.append((f"variable {variable['name']}", match.group(1) if match else text))
    return found


GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def substitute_grafana_variables(expr: str) -> str:
    """Replace Grafana's built-in and dashboard variables so that promtool can parse the expression."""
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", expr)


# --------------------------------------------------------------------------- systemd units


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> values in order (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"line {number}: a setting before the first section"
        key, sep, value = line.partition("=")
        assert sep, f"line {number}: not key=value: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


# --------------------------------------------------------------------------- the properties inside the manifests

PKI_PASSWORD = "deploy-test-secret"


def dev_pki(directory: Path) -> DevPki:
    """A development PKI standing in for the Secrets' key and trust stores (server certificate valid for 127.0.0.1 too)."""
    return generate_dev_pki(
        directory,
        hosts=["kafka-controller-0.kafka-controller.kafka.svc.cluster.local", "envelope-proxy.kafka.svc.cluster.local", "127.0.0.1"],
        clients=[],
        password=PKI_PASSWORD,
    )


def scram_file(directory: Path, users: dict[str, str] | None = None) -> Path:
    """A credentials file as `envelope-proxy scram add-user` writes it, standing in for Secret envelope-proxy-scram."""
    path = directory / "scram.json"
    for user, password in (users or {"alice": "alice-secret"}).items():
        add_user(path, user, password, ["SCRAM-SHA-256", "SCRAM-SHA-512"], iterations=4096)
    return path


def localize(raw: dict[str, str], pki: DevPki, scram: Path) -> dict[str, str]:
    """Point every store and credentials file at generated ones; any other absolute path must be one no parser opens."""
    out: dict[str, str] = {}
    for key, value in raw.items():
        if key.endswith("ssl.keystore.location"):
            value = str(pki.server_p12)
        elif key.endswith("ssl.truststore.location"):
            value = str(pki.truststore_p12)
        elif re.search(r"ssl\.(keystore|truststore|key)\.password$", key):
            value = pki.password
        elif key.endswith("sasl.scram.credentials.file"):
            value = str(scram)
        elif value.startswith("/"):
            assert key in ("audit.log.dir", "log.dirs", "metadata.log.dir"), f"{key}={value}: a file the test does not provide"
        out[key] = value
    return out


def sidecar_cluster_id() -> str:
    """The cluster id of sidecar.yaml's ConfigMap kafka-cluster-id: what the storage is formatted with and the proxy told."""
    return str(find(load_documents(KUBERNETES / "sidecar.yaml"), "ConfigMap", "kafka-cluster-id")["data"]["cluster.id"])


def render_sidecar(directory: Path, pod_name: str) -> tuple[dict[str, str], dict[str, str]]:
    """Run the ConfigMap's render.sh, as the sidecar's init container does, over sidecar.yaml's ConfigMap and Secrets.

    Returns the rendered (Kafka controller.properties, proxy.properties).
    """
    documents = load_documents(KUBERNETES / "sidecar.yaml")
    dirs = {name: directory / name for name in ("templates", "kafka-secrets", "proxy-secrets", "kafka-out", "proxy-out")}
    for path in dirs.values():
        path.mkdir(parents=True)
    for key, text in find(documents, "ConfigMap", "kafka-controller-config")["data"].items():
        (dirs["templates"] / key).write_text(text)
    for key, text in find(documents, "Secret", "kafka-controller-secrets")["stringData"].items():
        (dirs["kafka-secrets"] / key).write_text(text)
    for key, text in find(documents, "Secret", "envelope-proxy-secrets")["stringData"].items():
        (dirs["proxy-secrets"] / key).write_text(text)
    template = pod_template(find(documents, "StatefulSet", "kafka-controller"))
    assert template is not None
    (render,) = (c for c in template["spec"]["initContainers"] if c["name"] == "render")
    assert render["command"] == ["/bin/sh", "/templates/render.sh"]
    env = {
        "PATH": "/usr/bin:/bin",
        "POD_NAME": pod_name,
        "TEMPLATE_DIR": str(dirs["templates"]),
        "KAFKA_SECRET_DIR": str(dirs["kafka-secrets"]),
        "PROXY_SECRET_DIR": str(dirs["proxy-secrets"]),
        "KAFKA_OUT_DIR": str(dirs["kafka-out"]),
        "PROXY_OUT_DIR": str(dirs["proxy-out"]),
        "KAFKA_CLUSTER_ID": sidecar_cluster_id(),
    }
    result = subprocess.run(["sh", str(dirs["templates"] / "render.sh")], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, f"render.sh failed: {result.stderr}"
    return load_properties(dirs["kafka-out"] / "controller.properties"), load_properties(dirs["proxy-out"] / "proxy.properties")
