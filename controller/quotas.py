"""Client quotas: AlterClientQuotas (49, forwardable) and DescribeClientQuotas (48, a read).

AlterClientQuotas follows Kafka's ClientQuotaControlManager step by step: an
entity is a map from entity type to name (a type given twice keeps its last
name), an entity given twice in one request is refused ("Ignoring duplicate
entity", though the first one's changes are applied, as Kafka applies them),
removals are never validated, and of several problems the first in Java's
HashMap order is reported (controller/java_order.py). Both APIs are
cluster-level: ALTER_CONFIGS to change, DESCRIBE_CONFIGS to read.
"""

import math
import socket
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import cluster_allowed
from controller.image import MetadataImage, QuotaEntity
from controller.java_order import hashmap_order, java_map_text, map_hash, string_map_order
from envelope.error_messages import default_message
from envelope.java_types import INT_MAX, LONG_MAX

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
# Java compares a double with a long or an int converted to a double (Long.MAX_VALUE becomes 2**63)
_LONG_MAX_AS_DOUBLE, _INT_MAX_AS_DOUBLE = float(LONG_MAX), float(INT_MAX)
FRACTION_TOLERANCE = 1e-6
# QuotaConfig's key -> its ConfigDef type (LONG, INT or DOUBLE)
CLIENT_KEYS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG", "request_percentage": "DOUBLE", "controller_mutation_rate": "DOUBLE"}
IP_KEYS = {"connection_creation_rate": "INT"}
_TOO_LARGE = {"LONG": "a LONG", "INT": "an INT"}

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
UNSET_MESSAGE = ""  # what Kafka's generated message classes hold in a nullable string nobody set
LOCAL_NAMES = frozenset({"", "localhost"})  # what InetAddress.getByName answers without asking DNS

EntityMap = dict[str, str | None]


def _valid_ip_entity(name: str | None) -> bool:
    """Kafka's isValidIpEntity: null (the default ip) or whatever InetAddress.getByName resolves.

    Here: every numeric form getByName takes (127.1, ::1, ...), the empty name and localhost, which
    it resolves locally; other host names are not looked up (a DNS query on the controller's event
    loop could stall every client), so a name only DNS knows is refused where Kafka would take it."""
    if name is None or name in LOCAL_NAMES:
        return True
    family = socket.AF_UNSPEC
    if len(name) > 2 and name[0] == "[" and name[-1] == "]":
        name, family = name[1:-1], socket.AF_INET6  # getByName takes an IPv6 literal in brackets
    try:
        socket.getaddrinfo(name, None, family, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return False
    return True


def entity_map(items: Any) -> EntityMap:
    """AlterClientQuotasRequest.entries(): the entity as `new HashMap<>(n)` holds it (a type given twice keeps
    its last name), in that map's iteration order."""
    entity: EntityMap = {}
    for item in items:
        entity[str(item.entity_type)] = None if item.entity_name is None else str(item.entity_name)
    return {kind: entity[kind] for kind in string_map_order(entity, len(items))}


def _ordered(entity: EntityMap) -> list[tuple[str, str | None]]:
    return list(entity.items())


def entity_text(entity: EntityMap) -> str:
    """ClientQuotaEntity.toString."""
    return f"ClientQuotaEntity(entries={java_map_text(_ordered(entity))})"


def entity_problem(entity: EntityMap) -> str | None:
    """validateEntity, then configKeysForEntityType (INVALID_REQUEST), or None."""
    if not entity:
        return "Invalid empty client quota entity"
    for kind, name in _ordered(entity):
        if kind not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {kind}"
        if name is not None and not name:
            return f"Empty {kind} not supported"
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        if not _valid_ip_entity(entity[IP]):
            return f"{entity[IP]} is not a valid IP or resolvable host."
    return None


def value_problem(keys: dict[str, str], key: str, value: float) -> str | None:
    """validateQuotaKeyValue (INVALID_REQUEST), or None."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    if value > (_LONG_MAX_AS_DOUBLE if kind == "LONG" else _INT_MAX_AS_DOUBLE):
        return f"Proposed value for {key} is too large for {_TOO_LARGE[kind]}."
    if abs(math.fmod(value, 1.0)) > FRACTION_TOLERANCE:
        return f"{key} cannot be a fractional value."
    return None


def quota_entity(entity: EntityMap) -> QuotaEntity:
    """How the image keys an entity: its (type, name) pairs, sorted."""
    return tuple(sorted(entity.items()))


def entity_of(items: Any) -> QuotaEntity:
    return quota_entity({str(e.entity_type): None if e.entity_name is None else str(e.entity_name) for e in items})


def entity_answer(entity: QuotaEntity) -> list[dict[str, Any]]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity]


@dataclass
class _Outcome:
    entity: EntityMap
    code: int = ErrorCode.none
    message: str | None = None
    changes: dict[str, float | None] = field(default_factory=dict)


class QuotaHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer

    def alter_client_quotas(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER_CONFIGS):
            # AlterClientQuotasRequest.getErrorResponse: every entry as sent, with the error's own text.
            return {
                "throttle_time": 0,
                "entries": [
                    {
                        "error_code": ErrorCode.cluster_authorization_failed,
                        "error_message": default_message(ErrorCode.cluster_authorization_failed),
                        "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity],
                    }
                    for entry in body.entries
                ],
            }
        outcomes: dict[QuotaEntity, _Outcome] = {}
        applied: list[_Outcome] = []
        for entry in body.entries:
            entity = entity_map(entry.entity)
            key = quota_entity(entity)
            changes: dict[str, float | None] = {}
            duplicate_key = False
            for op in entry.ops:
                if str(op.key) in changes:
                    duplicate_key = True
                else:
                    changes[str(op.key)] = None if op.remove else float(op.value)
            if duplicate_key or key in outcomes:
                outcomes[key] = _Outcome(entity, ErrorCode.invalid_request, f"Ignoring duplicate entity {entity_text(entity)}")
                continue
            outcome = self._alter_entity(entity, changes)
            outcomes[key] = outcome
            if outcome.code == ErrorCode.none:
                applied.append(outcome)
        if not body.validate_only:
            for outcome in applied:
                self._apply(outcome)
        # Kafka answers from a HashMap<ClientQuotaEntity, ApiError>: in its order.
        order = hashmap_order(outcomes, lambda k: 31 + map_hash(outcomes[k].entity.items()))
        return {
            "throttle_time": 0,
            "entries": [
                {
                    "error_code": outcomes[key].code,
                    "error_message": outcomes[key].message,
                    "entity": [{"entity_type": kind, "entity_name": name} for kind, name in _ordered(outcomes[key].entity)],
                }
                for key in order
            ],
        }

    def _alter_entity(self, entity: EntityMap, changes: dict[str, float | None]) -> _Outcome:
        problem = entity_problem(entity)
        if problem:
            return _Outcome(entity, ErrorCode.invalid_request, problem)
        keys = IP_KEYS if IP in entity else CLIENT_KEYS
        for key in string_map_order(changes, len(changes)):
            value = changes[key]
            if value is not None and (problem := value_problem(keys, key, value)):
                return _Outcome(entity, ErrorCode.invalid_request, problem)
        return _Outcome(entity, changes=changes)

    def _apply(self, outcome: _Outcome) -> None:
        key = quota_entity(outcome.entity)
        values = self.image.quotas.setdefault(key, {})
        for name, value in outcome.changes.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        if not values:
            del self.image.quotas[key]

    def describe_client_quotas(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """A Kafka broker's answer (KafkaApis, then ClientQuotasImage.describe): the filter checked component by
        component, then every entity it matches; a refused filter fails the request with no entries."""
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE_CONFIGS):
            # Errors.CLUSTER_AUTHORIZATION_FAILED.exception carries the default text, which ApiError drops.
            return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "entries": None}
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        try:
            for component in body.components:
                kind, match_type, match = str(component.entity_type), int(component.match_type), component.match
                if not kind:
                    raise _FilterRefused(ErrorCode.invalid_request, "Invalid empty entity type.")
                if kind in exact or kind in typed:
                    raise _FilterRefused(ErrorCode.invalid_request, f"Entity type {kind} cannot appear more than once in the filter.")
                if kind not in ENTITY_TYPES:
                    raise _FilterRefused(ErrorCode.unsupported_version, f"Unsupported entity type {kind}")
                if match_type == MATCH_EXACT:
                    if match is None:
                        raise _FilterRefused(ErrorCode.invalid_request, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                    exact[kind] = str(match)
                elif match_type == MATCH_DEFAULT:
                    if match is not None:
                        raise _FilterRefused(ErrorCode.invalid_request, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                    exact[kind] = None
                elif match_type == MATCH_ANY:
                    if match is not None:
                        raise _FilterRefused(ErrorCode.invalid_request, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                    typed.add(kind)
                else:
                    raise _FilterRefused(ErrorCode.invalid_request, f"Unknown match type {match_type}")
            if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
                raise _FilterRefused(
                    ErrorCode.invalid_request,
                    "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
                )
        except _FilterRefused as refused:
            return {"throttle_time": 0, "error_code": refused.code, "error_message": refused.message, "entries": None}
        entries = []
        for entity, values in self.image.quotas.items():
            names = dict(entity)
            if body.strict and len(names) != len(exact) + len(typed):
                continue
            if any(kind not in names or names[kind] != match for kind, match in exact.items()) or any(kind not in names for kind in typed):
                continue
            entries.append(
                {
                    "entity": [{"entity_type": kind, "entity_name": names[kind]} for kind in string_map_order(names)],
                    "values": [{"key": key, "value": values[key]} for key in string_map_order(values)],
                }
            )
        # `new DescribeClientQuotasResponseData()` leaves the message at the generated default, "".
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": UNSET_MESSAGE, "entries": entries}


class _FilterRefused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
