"""Client quotas: AlterClientQuotas (49, forwardable) and DescribeClientQuotas (48, a read).

Validation follows Kafka's ClientQuotaControlManager: entity types user,
client-id and ip (ip alone); the keys each entity type accepts; integer keys
must hold whole numbers. Both APIs are cluster-level: ALTER_CONFIGS to
change, DESCRIBE_CONFIGS to read.
"""

import ipaddress
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from controller.image import MetadataImage, QuotaEntity

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# key -> whether it must be a whole number (Kafka's LONG configs)
CLIENT_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True, "request_percentage": False, "controller_mutation_rate": False}
IP_KEYS = {"connection_creation_rate": True}

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def entity_problem(entity: QuotaEntity) -> str | None:
    if not entity:
        return "Invalid empty client quota entity"
    types = [kind for kind, _ in entity]
    if len(set(types)) != len(types):
        return "Invalid quota entity: duplicate entity type"
    for kind, name in entity:
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        if kind == IP and name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return f"{name} is not a valid IP or resolvable host."
    if IP in types and len(types) > 1:
        return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    return None


def key_problem(entity: QuotaEntity, key: str, value: float, remove: bool) -> str | None:
    keys = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in keys:
        return f"Invalid configuration key {key}"
    if not remove and keys[key] and not float(value).is_integer():
        return f"Configuration {key} must be a Long value"
    return None


def entity_of(items: Any) -> QuotaEntity:
    return tuple(sorted((str(e.entity_type), None if e.entity_name is None else str(e.entity_name)) for e in items))


def entity_answer(entity: QuotaEntity) -> list[dict[str, Any]]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity]


class QuotaHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer

    def alter_client_quotas(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS):
            return {
                "throttle_time": 0,
                "entries": [
                    {"error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "entity": entity_answer(entity_of(e.entity))}
                    for e in body.entries
                ],
            }
        results = []
        for entry in body.entries:
            entity = entity_of(entry.entity)
            problem = entity_problem(entity) or next(
                (p for op in entry.ops if (p := key_problem(entity, str(op.key), float(op.value), bool(op.remove)))), None
            )
            if problem is None and not body.validate_only:
                values = self.image.quotas.setdefault(entity, {})
                for op in entry.ops:
                    if op.remove:
                        values.pop(str(op.key), None)
                    else:
                        values[str(op.key)] = float(op.value)
                if not values:
                    del self.image.quotas[entity]
            results.append(
                {"error_code": ErrorCode.invalid_request if problem else ErrorCode.none, "error_message": problem, "entity": entity_answer(entity)}
            )
        return {"throttle_time": 0, "entries": results}

    def describe_client_quotas(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE_CONFIGS):
            return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "entries": None}
        components = [(str(c.entity_type), int(c.match_type), c.match) for c in body.components]
        kinds = [kind for kind, _, _ in components]
        problem = None
        if len(set(kinds)) != len(kinds):
            problem = "Duplicate entity type in filter"
        elif any(kind not in (USER, CLIENT_ID, IP) for kind in kinds):
            problem = f"Custom entity type {next(k for k in kinds if k not in (USER, CLIENT_ID, IP))} not supported"
        elif IP in kinds and len(kinds) > 1:
            problem = "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
        elif any(match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY) for _, match_type, _ in components):
            problem = "Unknown match type in filter"
        if problem:
            return {"throttle_time": 0, "error_code": ErrorCode.invalid_request, "error_message": problem, "entries": None}
        entries = []
        for entity, values in sorted(self.image.quotas.items(), key=lambda item: str(item[0])):
            names = dict(entity)
            if body.strict and set(names) != set(kinds):
                continue
            if not all(_component_matches(names, kind, match_type, match) for kind, match_type, match in components):
                continue
            entries.append({"entity": entity_answer(entity), "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "entries": entries}


def _component_matches(names: dict[str, str | None], kind: str, match_type: int, match: str | None) -> bool:
    if kind not in names:
        return False
    if match_type == MATCH_EXACT:
        return names[kind] == match
    if match_type == MATCH_DEFAULT:
        return names[kind] is None
    return True
