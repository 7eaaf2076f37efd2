"""Kafka's ACL vocabulary with its wire codes (AclOperation, ResourceType, ...)."""

import enum
import ipaddress
from dataclasses import dataclass

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


class PermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


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
        """Why Kafka would refuse to create this binding, or None."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"invalid resource type {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"invalid pattern type {self.pattern_type.name}"
        if self.operation in (Operation.ANY, Operation.UNKNOWN):
            return f"invalid operation {self.operation.name}"
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            return f"invalid permission type {self.permission.name}"
        if not self.resource_name:
            return "resource name must not be empty"
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        try:
            Principal.parse(self.principal)
        except ValueError as exc:
            return str(exc)
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
    """`super.users` as Kafka reads it: principals separated by ';', because a certificate DN contains ','."""
    return frozenset(user.strip() for user in (text or "").split(";") if user.strip())
