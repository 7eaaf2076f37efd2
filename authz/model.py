"""Kafka's ACL vocabulary with its wire codes (AclOperation, ResourceType, ...)."""

import enum
import ipaddress
from dataclasses import dataclass
from typing import TypeVar

from envelope.principal import Principal

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15  # KIP-939, on TRANSACTIONAL_ID


class PermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


AclEnum = TypeVar("AclEnum", ResourceType, PatternType, Operation, PermissionType)


def from_code(kind: type[AclEnum], code: int) -> AclEnum:
    """Kafka's `fromCode`: a code this version does not know is UNKNOWN, never an error."""
    try:
        return kind(code)
    except ValueError:
        return kind.UNKNOWN


class Decision(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: PermissionType

    def validate(self) -> str | None:
        """Why Kafka's controller refuses to create this binding (INVALID_REQUEST), or None.

        Kafka's order and words: ControllerApis' AclApis checks the CLUSTER name and the empty
        name, then AclControlManager.validateNewAcl the codes and the principal's colon. The
        host is not checked: Kafka stores any text. (ANY and MATCH never get here from the
        wire: Kafka cannot even build such a binding, see controller/acls.py.)
        """
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        if not self.resource_name:
            return "Invalid empty resource name"
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (Operation.ANY, Operation.UNKNOWN):
            return f"Invalid operation {self.operation.name}"
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            return f"Invalid permissionType {self.permission.name}"
        if ":" not in self.principal:
            return f"Could not parse principal from `{self.principal}` (no colon is present separating the principal type from the principal name)"
        return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A DescribeAcls/DeleteAcls filter; None fields match anything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: PermissionType = PermissionType.ANY

    def unknown_problem(self) -> str | None:
        """Kafka's AclControlManager.validateFilter: a code it does not know in the filter (INVALID_REQUEST)."""
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is Operation.UNKNOWN or self.permission is PermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and binding.resource_type is not self.resource_type:
            return False
        if not self._matches_pattern(binding):
            return False
        if self.principal is not None and binding.principal != self.principal:
            return False
        if self.host is not None and binding.host != self.host:
            return False
        if self.operation is not Operation.ANY and binding.operation is not self.operation:
            return False
        return self.permission is PermissionType.ANY or binding.permission is self.permission

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            # MATCH: every binding that would apply to the named resource.
            if self.resource_name is None:
                return True
            if binding.pattern_type is PatternType.LITERAL:
                return binding.resource_name in (self.resource_name, WILDCARD_RESOURCE)
            return self.resource_name.startswith(binding.resource_name)
        if self.pattern_type is not PatternType.ANY and binding.pattern_type is not self.pattern_type:
            return False
        return self.resource_name is None or binding.resource_name == self.resource_name


@dataclass(frozen=True, slots=True)
class Action:
    operation: Operation
    resource_type: ResourceType
    resource_name: str


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who asks, from where, through what. `forwarding_principal` is set for envelopes."""

    principal: Principal
    client_address: ipaddress.IPv4Address | ipaddress.IPv6Address
    listener: str
    security_protocol: str
    sasl_mechanism: str | None = None
    client_id: str | None = None
    client_software_name: str | None = None
    client_software_version: str | None = None
    forwarding_principal: Principal | None = None


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users` as Kafka reads it: principals separated by ';', because a certificate DN contains ','.

    Empty entries are skipped; an entry without a type is refused with SecurityUtils.parseKafkaPrincipal's
    ValueError (Kafka fails to start).
    """
    users = frozenset(user.strip() for user in (text or "").split(";") if user.strip())
    for user in sorted(users):
        if ":" not in user:
            raise ValueError(f"expected a string in format principalType:principalName but got {user}")
    return users
