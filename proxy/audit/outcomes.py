"""What a request ended in (`Outcome`): the route hands it, with the answer, to the one respond step, whose outcome record
says it (proxy/audit/request_records.py `RequestAudit.record`) and whose metrics count it by its `metric`."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode

from authz.actions import ResourceAccess
from envelope.responses import ResourceError


@dataclass(frozen=True, slots=True)
class Local:
    """Answered by the proxy itself (ApiVersions, DescribeCluster, Metadata without topics)."""

    metric: ClassVar[str] = "local"
    forwarded: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Refused:
    """Refused: the connection closes (or an error is answered: a bad client software name, a token request a broker
    refuses itself), with `code` the answer's error code, decided on `resources`."""

    reason: str
    code: int = ErrorCode.invalid_request
    resources: list[ResourceAccess] = field(default_factory=list)
    metric: ClassVar[str] = "refused"
    forwarded: ClassVar[bool] = False


# Who chose a read's error code (`Read.error_by`).
BY_UPSTREAM = "upstream"
"""The read upstream: its answer's code, or it could not be reached (a `result.errors` row named `upstream`)."""
BY_EDGE = "edge"
"""The edge authorizer denied every resource asked: nothing went upstream, the code is the denial's."""
BY_PROXY = "proxy"
"""The proxy failed answering (a read route that threw): a `result.errors` row naming no resource."""


@dataclass(frozen=True, slots=True)
class Read:
    """A read answered through the edge authorizer: what it denied, and the error if any, with who chose it."""

    policy: str
    resources: list[ResourceAccess]
    """What the client asked to see."""
    denied: list[ResourceAccess]
    code_of: Callable[[ResourceAccess], int]
    error_code: int
    error_message: str | None
    error_by: str = BY_UPSTREAM
    metric: ClassVar[str] = "read"
    forwarded: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The controller answered the envelope: its envelope error, and the embedded answer's top-level and per-resource errors."""

    envelope_error: int
    top: int
    results: list[ResourceError]
    metric: ClassVar[str] = "forwarded"
    forwarded: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class Failed:
    """No answer from the controller to pass on: the proxy answers `code` for every resource."""

    envelope_error: int | None
    code: int
    message: str
    metric: ClassVar[str] = "failed"
    forwarded: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class Unrecorded:
    """Not forwarded because its intent could not be written (audit.on.failure=reject): counted, no outcome record."""

    metric: ClassVar[str] = "failed"
    forwarded: ClassVar[bool] = False


Outcome = Local | Refused | Read | Forwarded | Failed | Unrecorded


__all__ = ["BY_EDGE", "BY_PROXY", "BY_UPSTREAM", "Failed", "Forwarded", "Local", "Outcome", "Read", "Refused", "Unrecorded"]
