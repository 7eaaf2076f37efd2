"""Least-privilege synthesis: the fewest ALLOW bindings that allow every request allowed in the window.

Per principal (docs/audit-job.md, "Least privilege"):

1. Each allowed decision needs its operation on its resource from its host (``*`` unless
   hosts are taken from the observed client addresses). A CreateTopics topic needs CREATE on
   the topic, not on the cluster: the narrower grant.
2. Names are literal, except where at least ``prefix_threshold`` observed names of one
   (principal, host, resource type, operation) share a prefix: then one PREFIXED binding
   replaces them. A prefix ends at a separator (``-``, ``.`` or ``_``, kept in the prefix) with
   at least one character before it: ``payments-eu-1`` offers ``payments-`` and ``payments-eu-``.
   The longest prefixes are taken first, each only if it covers the threshold of names that
   no longer prefix covers already, so ``payments-eu-`` wins over ``payments-`` unless other
   ``payments-`` names make up the threshold by themselves. The cluster is never a prefix.
3. A binding that another chosen binding of the principal already covers (the same or a
   covering pattern, an operation that implies it, the same host or ``*``) is dropped: an
   ALTER on ``orders`` makes DESCRIBE on ``orders`` redundant.

ALL and ``User:*`` are never synthesized: they grant what no request needed.
Pure Python: the job runs it on the driver over the distinct needs it collected.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from authz import AclBinding, Operation, PatternType, PermissionType, ResourceType
from authz.model import WILDCARD_HOST, WILDCARD_RESOURCE
from spark_audit.acl_matching import implies

#: Characters a prefix may end with: the separators Kafka names are usually built with.
PREFIX_SEPARATORS = frozenset("-._")
#: ``--acl-prefix-threshold``'s default: three names sharing a prefix make a PREFIXED binding.
DEFAULT_PREFIX_THRESHOLD = 3
#: A threshold of 0 turns prefixes off; 1 would make a prefix of every single name, so the least is 2.
NO_PREFIXES = 0
LEAST_PREFIX_THRESHOLD = 2


@dataclass(frozen=True, slots=True, order=True)
class Need:
    """One thing a principal did and must keep being allowed to do: an operation on a named resource from a host."""

    principal: str
    host: str
    resource_type: ResourceType
    resource_name: str
    operation: Operation


def prefixes_of(name: str) -> list[str]:
    """Every prefix of ``name`` that ends with a separator and has a character before it, shortest first."""
    return [name[: end + 1] for end in range(1, len(name)) if name[end] in PREFIX_SEPARATORS]


def collapse(names: Iterable[str], threshold: int) -> tuple[list[str], list[str]]:
    """(prefixes, literal names) covering ``names``: a prefix only where ``threshold`` names not covered by a longer one share it."""
    remaining = set(names)
    if threshold == NO_PREFIXES:
        return [], sorted(remaining)
    candidates = {prefix for name in remaining for prefix in prefixes_of(name)}
    chosen: list[str] = []
    for prefix in sorted(candidates, key=lambda p: (-len(p), p)):
        covered = {name for name in remaining if name.startswith(prefix)}
        if len(covered) >= threshold:
            chosen.append(prefix)
            remaining -= covered
    return sorted(chosen), sorted(remaining)


def _binding(need: Need, name: str, pattern: PatternType) -> AclBinding:
    return AclBinding(need.resource_type, name, pattern, need.principal, need.host, need.operation, PermissionType.ALLOW)


def covers(wide: AclBinding, narrow: AclBinding) -> bool:
    """``wide`` allows everything ``narrow`` allows (same principal and type; its pattern, operation and host cover ``narrow``'s)."""
    if wide.principal != narrow.principal or wide.resource_type is not narrow.resource_type or wide.permission is not narrow.permission:
        return False
    if wide.host not in (WILDCARD_HOST, narrow.host) or not implies(wide.operation, narrow.operation):
        return False
    if wide.pattern_type is PatternType.LITERAL:
        if wide.resource_name == WILDCARD_RESOURCE:
            return True
        return narrow.pattern_type is PatternType.LITERAL and narrow.resource_name == wide.resource_name
    return narrow.resource_name.startswith(wide.resource_name) and narrow.resource_name != WILDCARD_RESOURCE


def without_covered(bindings: Sequence[AclBinding]) -> list[AclBinding]:
    """``bindings`` less each one another of them covers (coverage is transitive, so what is left covers the rest)."""
    unique = list(dict.fromkeys(bindings))
    by_group: dict[tuple[str, ResourceType], list[AclBinding]] = defaultdict(list)
    for binding in unique:
        by_group[(binding.principal, binding.resource_type)].append(binding)
    kept: list[AclBinding] = []
    for group in by_group.values():
        # a binding is covered only by one of the same name or by a prefix (or `*`): look there, not at every binding
        by_name: dict[str, list[AclBinding]] = defaultdict(list)
        wide = [b for b in group if b.pattern_type is PatternType.PREFIXED or b.resource_name == WILDCARD_RESOURCE]
        for binding in group:
            by_name[binding.resource_name].append(binding)
        for binding in group:
            rivals = [*by_name[binding.resource_name], *wide]
            if not any(other != binding and covers(other, binding) for other in rivals):
                kept.append(binding)
    return kept


def synthesize(needs: Iterable[Need], *, prefix_threshold: int = DEFAULT_PREFIX_THRESHOLD) -> list[AclBinding]:
    """The minimal ALLOW bindings for ``needs``, sorted by principal, resource type, name, operation and host."""
    names: dict[tuple[str, str, ResourceType, Operation], set[str]] = defaultdict(set)
    for need in needs:
        names[(need.principal, need.host, need.resource_type, need.operation)].add(need.resource_name)
    chosen: list[AclBinding] = []
    for (principal, host, resource_type, operation), group in names.items():
        first = Need(principal, host, resource_type, "", operation)
        threshold = NO_PREFIXES if resource_type is ResourceType.CLUSTER else prefix_threshold
        prefixes, literals = collapse(group, threshold)
        chosen += [_binding(first, prefix, PatternType.PREFIXED) for prefix in prefixes]
        chosen += [_binding(first, name, PatternType.LITERAL) for name in literals]
    return sorted(without_covered(chosen), key=sort_key)


def sort_key(binding: AclBinding) -> tuple[str, str, str, str, str, str, str]:
    return (
        binding.principal,
        binding.resource_type.name,
        binding.resource_name,
        binding.pattern_type.name,
        binding.operation.name,
        binding.host,
        binding.permission.name,
    )
