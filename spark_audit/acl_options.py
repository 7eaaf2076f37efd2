"""What the ACL hygiene step is asked to do (docs/audit-job.md, "Least privilege"); spark_audit/acl_cli.py reads it from the command line."""

from __future__ import annotations

from dataclasses import dataclass

from authz import AclBinding
from spark_audit.acl_synthesis import DEFAULT_PREFIX_THRESHOLD


@dataclass(frozen=True)
class AclHygieneOptions:
    #: where the ACLs in force came from: the file, or ``controller:<bootstrap>``
    source: str
    #: the ACLs in force, in their order
    acls: tuple[AclBinding, ...]
    #: principals the authorizer allows everything (Kafka's super.users): they need no grant
    super_users: frozenset[str] = frozenset()
    #: the window is the last this-many seconds of the records; None: every stored record
    window_seconds: int | None = None
    #: observed names sharing a prefix that make a PREFIXED binding; 0: never
    prefix_threshold: int = DEFAULT_PREFIX_THRESHOLD
    #: one binding per observed client address instead of host ``*``
    observed_hosts: bool = False
