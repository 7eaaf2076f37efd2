"""The ACL hygiene step's command-line options: read, checked, and the ACLs in force fetched, before Spark starts."""

from __future__ import annotations

import argparse
from typing import Any

import javaproperties

from authz.model import parse_super_users
from spark_audit.acl_options import AclHygieneOptions
from spark_audit.acl_source import AclSourceError, from_controller, from_file
from spark_audit.acl_synthesis import DEFAULT_PREFIX_THRESHOLD, LEAST_PREFIX_THRESHOLD, NO_PREFIXES
from spark_audit.options import parse_duration
from spark_audit.whatif import parse_properties

#: ``--acl-hosts``: every synthesized binding from any host, or one binding per observed client address.
ANY_HOST = "any"
OBSERVED_HOSTS = "observed"


class AclOptionError(ValueError):
    """A bad ACL option: the message names it (exit status 2, before Spark starts)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ACL hygiene and least privilege (docs/audit-job.md, Least privilege)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--acl-file", metavar="FILE", help="the ACLs in force: JSON lines of bindings, or the controller's metadata.json")
    source.add_argument(
        "--acl-from-controller",
        metavar="HOST:PORT",
        help="the ACLs in force, asked with DescribeAcls through the proxy (admin credentials)",
    )
    group.add_argument("--acl-admin-config", metavar="FILE", help="admin client properties for --acl-from-controller (librdkafka keys)")
    group.add_argument(
        "--acl-admin-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="admin client property, e.g. sasl.username=admin (repeatable)",
    )
    group.add_argument("--acl-super-users", metavar="LIST", help="super users, as Kafka's super.users: User:admin;User:proxy")
    group.add_argument("--acl-window", metavar="DURATION", help="judge the last DURATION of the records (default: every stored record)")
    group.add_argument(
        "--acl-prefix-threshold",
        type=int,
        default=DEFAULT_PREFIX_THRESHOLD,
        metavar="N",
        help=f"observed names sharing a prefix that become one PREFIXED binding (default: {DEFAULT_PREFIX_THRESHOLD}; 0: never)",
    )
    group.add_argument(
        "--acl-hosts",
        choices=(ANY_HOST, OBSERVED_HOSTS),
        default=ANY_HOST,
        help="synthesized bindings from any host (*), or one per observed client address (default: any)",
    )


def _admin_config(args: argparse.Namespace) -> dict[str, str]:
    config: dict[str, str] = {}
    if args.acl_admin_config:
        try:
            with open(args.acl_admin_config, encoding="utf-8") as f:
                config.update(javaproperties.load(f))
        except OSError as exc:
            raise AclOptionError(f"--acl-admin-config: cannot read {args.acl_admin_config}: {exc.strerror or exc}") from None
    try:
        config.update(parse_properties(args.acl_admin_option))
    except ValueError as exc:
        raise AclOptionError(f"--acl-admin-option: {exc}") from None
    return config


def options_from(args: Any) -> AclHygieneOptions | None:
    """The ACL hygiene options, with the ACLs in force read (from the file or the controller); None when not asked for."""
    tuning = (args.acl_admin_config, args.acl_admin_option, args.acl_super_users, args.acl_window)
    if not (args.acl_file or args.acl_from_controller):
        if any(tuning):
            raise AclOptionError("the --acl-* options need the ACLs in force: --acl-file FILE or --acl-from-controller HOST:PORT")
        return None
    if args.acl_prefix_threshold != NO_PREFIXES and args.acl_prefix_threshold < LEAST_PREFIX_THRESHOLD:
        raise AclOptionError(f"--acl-prefix-threshold must be {NO_PREFIXES} (no prefixes) or at least {LEAST_PREFIX_THRESHOLD}")
    if (args.acl_admin_config or args.acl_admin_option) and not args.acl_from_controller:
        raise AclOptionError("--acl-admin-config and --acl-admin-option go with --acl-from-controller")
    try:
        window = parse_duration(args.acl_window) if args.acl_window else None
    except ValueError as exc:
        raise AclOptionError(f"--acl-window: {exc}") from None
    try:
        super_users = parse_super_users(args.acl_super_users)
    except ValueError as exc:
        raise AclOptionError(f"--acl-super-users: {exc}") from None
    try:
        if args.acl_file:
            source, acls = args.acl_file, from_file(args.acl_file)
        else:
            source, acls = f"controller:{args.acl_from_controller}", from_controller(args.acl_from_controller, _admin_config(args))
    except AclSourceError as exc:
        option = "--acl-file" if args.acl_file else "--acl-from-controller"
        raise AclOptionError(f"{option}: {exc}") from None
    return AclHygieneOptions(
        source=source,
        acls=tuple(acls),
        super_users=super_users,
        window_seconds=window,
        prefix_threshold=args.acl_prefix_threshold,
        observed_hosts=args.acl_hosts == OBSERVED_HOSTS,
    )
