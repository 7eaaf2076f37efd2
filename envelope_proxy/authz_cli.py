"""`envelope-proxy authz check`: decide a file of cases with a configured authorizer and list the mismatches
(`authz probe` and `authz replay` ask a running controller instead: authz_probe_cli.py, authz_replay_cli.py).

For plug-in authors and for operators about to change ACLs: the authorizer is
built exactly as the proxy and the embedded controller build it
(`authorizer.class.name` and the rest of the properties file). ACLs come from
`--acls` (JSON lines, or a controller's metadata.json), or else from the
`metadata.log.dir` the file names. Exit status: 0 all cases hold, 1 some do
not, 2 bad input.
"""

import argparse
import sys
from pathlib import Path

from authz import AclStore
from authz.acl_file import AclFileError, load_acls
from authz.cases import CaseFileError, load_cases, mismatches
from controller.persistence import FILE_NAME
from envelope_proxy.authz_probe_cli import add_probe_parser, run_probe
from envelope_proxy.authz_replay_cli import add_replay_parser, run_replay
from proxy.properties import ConfigError, load_authorizer, load_properties

KEY = "authorizer.class.name"


def add_authz_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    authz = commands.add_parser("authz", help="test an authorizer against a file of cases")
    actions = authz.add_subparsers(dest="authz_command", required=True)
    check = actions.add_parser("check", help="print every case the configured authorizer decides otherwise (exit 1 if any)")
    check.add_argument("--config", required=True, help="a .properties file with authorizer.class.name (a proxy or controller config)")
    check.add_argument("--cases", required=True, help="JSON lines: principal, host, operation, resourceType, resourceName, expect, ...")
    check.add_argument("--acls", help="ACLs for an ACL-keeping authorizer: JSON lines, or a controller's metadata.json")
    add_probe_parser(actions)
    add_replay_parser(actions)


def run_authz(args: argparse.Namespace) -> int:
    if args.authz_command == "probe":
        return run_probe(args)
    if args.authz_command == "replay":
        return run_replay(args)
    try:
        return _check(Path(args.config), Path(args.cases), Path(args.acls) if args.acls else None)
    except (CaseFileError, AclFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _check(config: Path, cases_path: Path, acls_path: Path | None) -> int:
    properties = load_properties(config)
    name = properties.get(KEY, "").strip()
    if not name:
        raise ConfigError(KEY, properties.get(KEY), f"{config} names no authorizer to check")
    authorizer = load_authorizer(name, properties)
    if acls_path is None and properties.get("metadata.log.dir"):
        stored = Path(properties["metadata.log.dir"]) / FILE_NAME
        acls_path = stored if stored.exists() else None
    if acls_path is not None:
        if not isinstance(authorizer, AclStore):
            raise ConfigError(KEY, name, "--acls given, but this authorizer keeps no ACLs (it has no create_acls/delete_acls/describe_acls)")
        bindings = load_acls(acls_path)
        authorizer.create_acls(bindings)
        print(f"{len(bindings)} ACLs from {acls_path}")
    cases = load_cases(cases_path)
    found = mismatches(authorizer, cases)
    for mismatch in found:
        print(f"MISMATCH {mismatch}")
    print(f"{len(cases)} cases, {len(found)} mismatches ({name})")
    return 1 if found else 0
