"""The proxy's own authorization decisions for reads it sends under its own identity.

Reads (Metadata with topics, DescribeConfigs, DescribeAcls) are not
forwardable, so the controller would see the proxy, not the client. The
proxy therefore decides first. Two policies:

- `deny` (the default): no client read reaches the upstream.
- a plug-in named by entry point or dotted path (see authz.plugin) decides alone.
- `acl`: Kafka's ACL semantics over a mirror of the upstream's own ACLs,
  fetched with DescribeAcls under the proxy's identity, plus the proxy's
  `super.users` and `allow.everyone.if.no.acl.found`. The mirror is
  refreshed when older than `edge.acl.refresh.ms` and whenever the ACL
  generation moved since it was loaded, so a change made through the proxy
  counts at once: in this process, and in every process sharing its port
  (`socket.reuse.port`) through the generation file (`SharedGeneration`).
"""

import logging
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio
from kio.schema.errors import ErrorCode

from authz import (
    AclAuthorizer,
    AclBinding,
    Action,
    Authorizer,
    Decision,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from authz.actions import ResourceAccess
from envelope.apis import ApiKey
from envelope.build import build_entity
from envelope.codec import decode_response_body, encode_request, request_schema
from proxy.forward.offload import CpuOffload
from proxy.properties import ConfigError
from proxy.upstream.link import UpstreamUnavailable
from proxy.upstream.pool import ControllerPool

log = logging.getLogger(__name__)

_DESCRIBE_ACLS_VERSION = 1  # v1 has pattern types; every Kafka 2.0+ controller serves it

GENERATION_DIR_KEY = "edge.generation.dir"


def default_generation_dir() -> Path:
    """Where the processes of one user find each other's generation files when `edge.generation.dir` is unset and
    `socket.reuse.port=true`: only processes of one user can share a port (Linux's SO_REUSEPORT rule)."""
    return Path(tempfile.gettempdir()) / f"envelope-proxy-{os.geteuid()}"


def generation_dir_problem(path: Path, *, default: bool) -> str | None:
    """Why `path` cannot hold the generation files (None when it can), told without creating anything, so check-config
    says it too. A configured directory must exist; the default one is made at start when missing."""
    try:
        info = os.lstat(path) if default else os.stat(path)  # a configured path may be a link to a directory
    except FileNotFoundError:
        if not default:
            return "does not exist: it must be a directory every proxy process on the port can write (the same in each)"
        parent = path.parent
        return None if os.access(parent, os.W_OK | os.X_OK) else f"cannot be created: {parent} is not writable"
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if default and (info.st_uid != os.geteuid() or info.st_mode & 0o022):
        # Another user's directory in a shared temp folder could swap or freeze the files: refuse it.
        return f"is owned by uid {info.st_uid} or writable by others; set {GENERATION_DIR_KEY} to a directory of this user"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable by this process"
    return None


class SharedGeneration:
    """How many ACL (or token) changes were forwarded: a mirror loaded at one generation is stale at any other.

    Without a file the count is this process's own. With one (`edge.generation.dir`), it is also the file's length,
    shared by every process on the port: a change appends one byte (O_APPEND, atomic between processes of one host,
    no lock), before the client that made it gets its answer, and a reader stats the file (one syscall, 2 to 4 µs),
    so a decision made anywhere after that answer sees the change. The file's device and inode count too (a file
    removed and made again is a change), and so does this process's own count (its change counts here even if the
    append failed). A file that cannot be stated makes every read a new generation: mirrors reload each time (fail
    safe), and the error is logged once per outage."""

    def __init__(self, path: Path | None = None, *, default_dir: bool = False) -> None:
        self.path = path
        self._own = 0
        self._failures = 0
        self._failing = False
        if path is not None:
            _create(path, default_dir=default_dir)

    @property
    def shared(self) -> bool:
        return self.path is not None

    def read(self) -> tuple[int, int, int, int]:
        if self.path is None:
            return (self._own, 0, 0, 0)
        try:
            info = os.stat(self.path)
        except OSError as exc:
            self._failures += 1
            if not self._failing:
                log.error("cannot read %s (%s): every decision reloads from the upstream until it can", self.path, exc.strerror)
            self._failing = True
            return (self._own, -1, -1, self._failures)
        if self._failing:
            log.info("%s can be read again", self.path)
            self._failing = False
        return (self._own, info.st_dev, info.st_ino, info.st_size)

    def bump(self) -> None:
        """A change went through this process: every mirror loaded before is stale, here and in the other processes."""
        self._own += 1
        if self.path is None:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, b"\n")
            finally:
                os.close(fd)
        except OSError as exc:
            log.error(
                "cannot append to %s (%s): the other processes on this port keep their mirror until it is due for a refresh",
                self.path,
                exc.strerror,
            )


def _create(path: Path, *, default_dir: bool) -> None:
    """Make the generation file (and the default directory) at start; what stops it is a configuration error."""
    directory = path.parent
    try:
        if default_dir:
            directory.mkdir(mode=0o700, exist_ok=True)
        problem = generation_dir_problem(directory, default=default_dir)
        if problem is not None:
            raise ConfigError(GENERATION_DIR_KEY, str(directory), problem)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ConfigError(GENERATION_DIR_KEY, str(directory), f"cannot create {path.name}: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        raise ConfigError(GENERATION_DIR_KEY, str(directory), f"{path.name} is not a regular file of this user")


@dataclass(frozen=True)
class EdgeSettings:
    policy: str = "deny"  # "deny", "acl" or "plugin"
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    refresh_seconds: float = 5.0
    token_refresh_seconds: float = 5.0
    """How often the delegation tokens are read from the upstream for token logins (proxy/forward/token_mirror.py)."""
    plugin: Authorizer | None = field(default=None, compare=False, repr=False)
    plugin_name: str | None = None
    generation_dir: Path | None = None
    """Where the ACL and token generations are shared with the other processes on the port; None = this process's own."""
    generation_dir_default: bool = False
    """`generation_dir` is the default of `socket.reuse.port=true` (made at start), not a configured directory."""
    generation_port: int = 0
    """The lowest client listener port: the generation files are named after it, so groups on other ports never meet."""

    def generation_file(self, kind: str) -> Path | None:
        """`<dir>/port-<port>.<kind>` (kind `acls` or `tokens`), or None without a shared directory."""
        return None if self.generation_dir is None else self.generation_dir / f"port-{self.generation_port}.{kind}"

    def effective(self) -> dict[str, object]:
        return {
            "policy": self.policy,
            "super.users": sorted(self.super_users),
            "allow.everyone.if.no.acl.found": self.allow_everyone_if_no_acl_found,
            "edge.acl.refresh.ms": int(self.refresh_seconds * 1000),
            "edge.token.refresh.ms": int(self.token_refresh_seconds * 1000),
            "plugin": self.plugin_name,
            GENERATION_DIR_KEY: str(self.generation_dir) if self.generation_dir is not None else None,
            "generation.files": [str(self.generation_file(kind)) for kind in ("acls", "tokens")] if self.generation_dir is not None else [],
        }


class EdgeAuthorizer:
    def __init__(self, settings: EdgeSettings, upstream: ControllerPool) -> None:
        self.settings = settings
        self.upstream = upstream
        self._mirror: AclAuthorizer | None = None
        self._loaded_at = -float("inf")
        self._loaded_generation: tuple[int, int, int, int] | None = None
        self._lock = trio.Lock()
        self.offload = CpuOffload()
        default = settings.generation_dir_default
        self.acl_generation = SharedGeneration(settings.generation_file("acls"), default_dir=default)
        """Moved by every ACL change forwarded through any process on the port; checked before every decision."""
        self.token_generation = SharedGeneration(settings.generation_file("tokens"), default_dir=default)
        """Moved by every token change forwarded through any process on the port; watched by the token mirror."""

    @property
    def decides(self) -> bool:
        """Whether a policy decides at all: with `deny` every answer is no, whatever the upstream's ACLs say."""
        return self.settings.plugin is not None or self.settings.policy != "deny"

    def invalidate(self) -> None:
        """An ACL change went through the proxy: the next decision reloads, here and in every process on the port."""
        self._mirror = None
        self.acl_generation.bump()

    async def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        decider = await self._decider()
        if decider is None:
            return [Decision.DENIED] * len(actions)
        # Thousands of decisions (a Metadata naming every topic) are made off the event loop.
        return await self.offload.entries(len(actions), decider.authorize, ctx, actions)

    async def allowed(self, ctx: RequestContext, accesses: Sequence[ResourceAccess]) -> list[bool]:
        """Whether each access is allowed; the whole conversion runs off the event loop for thousands of them."""
        decider = await self._decider()
        if decider is None:
            return [False] * len(accesses)
        return await self.offload.entries(len(accesses), _allowed, decider, ctx, accesses)

    async def _decider(self) -> Authorizer | None:
        if self.settings.plugin is not None:
            return self.settings.plugin
        if self.settings.policy == "deny":
            return None
        return await self._current()

    async def _current(self) -> AclAuthorizer | None:
        async with self._lock:
            # Read before the fetch: a change made while it runs moves the generation again, and the next decision reloads.
            generation = self.acl_generation.read()
            stale = generation != self._loaded_generation or trio.current_time() - self._loaded_at > self.settings.refresh_seconds
            if self._mirror is None or stale:
                try:
                    bindings = await self._fetch()
                except (UpstreamUnavailable, AclMirrorError) as exc:
                    # Without the upstream's ACLs nothing can be decided safely: deny (fail closed).
                    log.error("edge authorizer: cannot load ACLs from the controller, denying reads: %s", exc)
                    self._mirror = None
                    return None
                self._mirror = AclAuthorizer(
                    self.settings.super_users,
                    allow_everyone_if_no_acl_found=self.settings.allow_everyone_if_no_acl_found,
                    acls=bindings,
                )
                self._loaded_at = trio.current_time()
                self._loaded_generation = generation
            return self._mirror

    async def _fetch(self) -> list[AclBinding]:
        values = {
            "resource_type_filter": int(ResourceType.ANY),
            "resource_name_filter": None,
            "pattern_type_filter": int(PatternType.ANY),
            "principal_filter": None,
            "host_filter": None,
            "operation": int(Operation.ANY),
            "permission_type": int(PermissionType.ANY),
        }
        body = build_entity(request_schema(ApiKey.DESCRIBE_ACLS, _DESCRIBE_ACLS_VERSION), values)
        frame = await self.upstream.request(lambda cid: encode_request(body, correlation_id=cid, client_id="envelope-proxy-edge"))
        _, response = decode_response_body(ApiKey.DESCRIBE_ACLS, _DESCRIBE_ACLS_VERSION, frame)
        if int(response.error_code) != ErrorCode.none:
            raise AclMirrorError(f"DescribeAcls answered {int(response.error_code)}: {response.error_message}")
        return [
            AclBinding(
                ResourceType(int(resource.resource_type)),
                str(resource.resource_name),
                PatternType(int(resource.pattern_type)),
                str(acl.principal),
                str(acl.host),
                Operation(int(acl.operation)),
                PermissionType(int(acl.permission_type)),
            )
            for resource in response.resources
            for acl in resource.acls
        ]


def _allowed(decider: Authorizer, ctx: RequestContext, accesses: Sequence[ResourceAccess]) -> list[bool]:
    actions = [Action(a.operation, a.resource_type, a.name) for a in accesses]
    return [decision is Decision.ALLOWED for decision in decider.authorize(ctx, actions)]


class AclMirrorError(Exception):
    pass
