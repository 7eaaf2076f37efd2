"""What the `authz probe` interop suites share: one policy (probe_acls.jsonl, probe_policy.rego for OPA), one
cases file for every controller, the probe run as the operator runs it, the decision a real client logged in as
the case's user gets, and a snapshot of the cluster's metadata to compare before and after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from authz.acl_file import load_acls
from authz.admin_apis import response_errors
from authz.cases import Case, load_cases
from authz.probe_plans import decide
from devkit import wire
from devkit.processes import write_properties
from envelope.apis import ApiKey
from envelope.config_resources import CONFIG_BROKER, CONFIG_TOPIC
from envelope_proxy.authz_probe_cli import plan_for_case
from envelope_proxy.cli import main
from envelope_proxy.embedded import proxy_properties
from proxy.net.sasl.login_modules import plain_jaas
from tests.interop.envelope_client import Controller, EnvelopeClient

HERE = Path(__file__).resolve().parent / "authorizers"
CASES = HERE / "probe_cases.jsonl"
ACLS = HERE / "probe_acls.jsonl"
POLICY = HERE / "probe_policy.rego"
DESCRIBE_ANY = 1
"""ResourceType/PatternType/AclOperation/AclPermissionType ANY in a DescribeAcls filter."""


def grant_policy(controller: Controller) -> None:
    """The ACLs of probe_acls.jsonl, created as the super user."""
    client = EnvelopeClient(controller)
    try:
        client.create_acls(
            [
                {
                    "resource_type": b.resource_type,
                    "resource_name": b.resource_name,
                    "resource_pattern_type": b.pattern_type,
                    "principal": b.principal,
                    "host": b.host,
                    "operation": b.operation,
                    "permission_type": b.permission,
                }
                for b in load_acls(ACLS)
            ]
        )
    finally:
        client.close()


def probe_config(workdir: Path, controller: Controller, **extra: str) -> Path:
    """A proxy configuration pointing at `controller`, logged in as User:proxy; its audit goes under `workdir`."""
    props = proxy_properties(int(controller.address.rsplit(":", 1)[1]), workdir / "audit")
    props["controller.quorum.bootstrap.servers"] = controller.address
    props["listener.name.controller.plain.sasl.jaas.config"] = (
        plain_jaas(username="proxy", password=controller.proxy_password)
    )
    props.update(extra)
    return write_properties(workdir / "proxy.properties", props)


def run_probe(config: Path, cases: Path, report: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    code = main(["authz", "probe", "--config", str(config), "--cases", str(cases), "--report", str(report), *flags])
    return code, json.loads(report.read_text())


def real_client_decision(broker: str, password: str, case: Case) -> str | None:
    """The decision the case's user gets sending the probe's request itself, from the case's host, to `broker`."""
    plan = plan_for_case(case, allow_changes=False)
    with wire.connect(broker, source=str(case.context.client_address), timeout=30) as sock:
        assert wire.sasl_plain_login(sock, case.context.principal.name, password) == 0
        top, results = response_errors(plan.api, wire.call(sock, plan.api, plan.version, plan.values))
    decision = decide(plan, {top, *(r.error_code for r in results)})
    return decision.name if decision is not None else None


def metadata(broker: str, password: str) -> dict[str, Any]:
    """Topics with their partition counts and configs, the ACLs and broker 1's configs, read as the super user."""
    with wire.connect(broker, timeout=30) as sock:
        assert wire.sasl_plain_login(sock, "admin", password) == 0
        answer = wire.call(sock, ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        topics = {str(t.name): len(t.partitions) for t in answer.topics}
        acl_filter = {
            "resource_type_filter": DESCRIBE_ANY,
            "resource_name_filter": None,
            "pattern_type_filter": DESCRIBE_ANY,
            "principal_filter": None,
            "host_filter": None,
            "operation": DESCRIBE_ANY,
            "permission_type": DESCRIBE_ANY,
        }
        acls = wire.call(sock, ApiKey.DESCRIBE_ACLS, 3, acl_filter)
        resources = [(CONFIG_BROKER, "1")] + [(CONFIG_TOPIC, name) for name in sorted(topics)]
        described = wire.call(
            sock,
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {
                "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None} for kind, name in resources],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
    return {
        "topics": topics,
        "acls": sorted(str(resource) for resource in acls.resources),
        "configs": {f"{r.resource_type}:{r.resource_name}": sorted((str(c.name), c.value) for c in r.configs) for r in described.results},
    }


def cases() -> list[Case]:
    return load_cases(CASES)
