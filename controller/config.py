"""The embedded controller's configuration, named like a KRaft controller's."""

from dataclasses import dataclass, field
from pathlib import Path

from authz import Authorizer
from controller.delegation_tokens import TokenSettings, parse_token_settings
from controller.identity import CLUSTER_ID_KEY
from envelope import kafka_uuid
from envelope.java_types import INT_MAX
from envelope.responses import NO_NODE
from proxy.files import directory_problem
from proxy.net.addresses import VOTERS_KEY, ControllerAddress, parse_voters
from proxy.net.settings import ListenerConfig, TransportSettings, parse_listeners, parse_transport
from proxy.properties import ConfigError, Properties, allow_everyone_if_no_acl_found, load_authorizer, load_properties, super_users

ACTIVE_ID_KEY = "embedded.controller.active.id"


@dataclass(frozen=True)
class ControllerConfig:
    node_id: int
    listeners: list[ListenerConfig]
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool
    default_partitions: int
    default_replication_factor: int
    broker_count: int
    transport: TransportSettings
    metadata_dir: Path | None = None
    """`metadata.log.dir`: where the image is kept across restarts; None = memory only."""
    authorizer_class: str = ""
    """`authorizer.class.name`; empty = none (everything allowed, ACL APIs answer SECURITY_DISABLED), as in Kafka."""
    voters: tuple[ControllerAddress, ...] = ()
    """`controller.quorum.voters`: the quorum this node stands in for; empty = this node alone."""
    active_id: int | None = None
    """`embedded.controller.active.id`: the node that acts as the active controller (None: no leader)."""
    cluster_id: str | None = None
    """`cluster.id`: the id this controller answers with; None = the one kept in `metadata.log.dir`, or a new one."""
    tokens: TokenSettings = field(default_factory=TokenSettings, repr=False)
    """`delegation.token.*`: the secret key (None: tokens disabled), lifetimes and the expiry check interval."""
    properties: dict[str, str] = field(default_factory=dict, repr=False)

    def make_authorizer(self) -> Authorizer | None:
        return load_authorizer(self.authorizer_class, self.properties) if self.authorizer_class else None

    def effective(self) -> dict[str, object]:
        return {
            "node.id": self.node_id,
            "process.roles": "controller",
            "listeners": [listener.effective() for listener in self.listeners],
            "super.users": sorted(self.super_users),
            "allow.everyone.if.no.acl.found": self.allow_everyone_if_no_acl_found,
            "num.partitions": self.default_partitions,
            "default.replication.factor": self.default_replication_factor,
            "embedded.broker.count": self.broker_count,
            "metadata.log.dir": str(self.metadata_dir) if self.metadata_dir else None,
            "authorizer.class.name": self.authorizer_class or None,
            VOTERS_KEY: ",".join(str(v) for v in self.voters) or None,
            ACTIVE_ID_KEY: self.active_id if self.active_id is not None else NO_NODE,
            CLUSTER_ID_KEY: self.cluster_id,
            **self.tokens.effective(),
            **self.transport.effective(),
        }


def parse_controller_config(raw: dict[str, str]) -> ControllerConfig:
    props = Properties(raw)
    authorizer_class = props.get("authorizer.class.name") or ""
    if authorizer_class:
        load_authorizer(authorizer_class, props.raw)  # a plug-in that cannot be built is a config error now, not at the first request
    node_id = props.required_int("node.id", minimum=0, maximum=INT_MAX)
    roles = props.list("process.roles", "controller")
    if "controller" not in roles or any(role not in ("controller", "broker") for role in roles):
        raise ConfigError("process.roles", props.get("process.roles"), "the embedded controller needs process.roles=controller")
    names = {n.upper() for n in props.list("controller.listener.names")}
    if not names:
        raise ConfigError("controller.listener.names", props.get("controller.listener.names"), "is required")
    listeners = parse_listeners(props, only=names)
    missing = names - {item.name for item in listeners}
    if missing:
        raise ConfigError(
            "controller.listener.names", props.get("controller.listener.names"), f"{', '.join(sorted(missing))} not among listeners"
        )
    voters = tuple(parse_voters(text)) if (text := props.get(VOTERS_KEY)) else ()
    voter_ids = [v.node_id for v in voters] or [node_id]
    if node_id not in voter_ids:
        raise ConfigError("node.id", str(node_id), f"is not among {VOTERS_KEY} ({', '.join(map(str, voter_ids))})")
    active = props.int(ACTIVE_ID_KEY, node_id, minimum=NO_NODE)
    if active != NO_NODE and active not in voter_ids:
        raise ConfigError(ACTIVE_ID_KEY, str(active), f"names no voter: use one of {', '.join(map(str, voter_ids))}, or {NO_NODE} for none")
    cluster_id = props.get(CLUSTER_ID_KEY)
    if cluster_id is not None and (problem := kafka_uuid.parse_problem(cluster_id)) is not None:
        raise ConfigError(CLUSTER_ID_KEY, cluster_id, problem)
    return ControllerConfig(
        node_id=node_id,
        voters=voters,
        cluster_id=cluster_id,
        active_id=None if active == NO_NODE else active,
        listeners=listeners,
        super_users=super_users(props),
        allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found(props),
        default_partitions=props.int("num.partitions", 1, minimum=1),
        default_replication_factor=props.int("default.replication.factor", 1, minimum=1),
        broker_count=props.int("embedded.broker.count", 1, minimum=1),
        metadata_dir=_metadata_dir(props.get("metadata.log.dir")),
        authorizer_class=authorizer_class,
        tokens=parse_token_settings(props),
        properties=dict(props.raw),
        transport=parse_transport(props),
    )


def load_controller_config(path: str | Path) -> ControllerConfig:
    return parse_controller_config(load_properties(path))


def _metadata_dir(text: str | None) -> Path | None:
    """`metadata.log.dir`; a path that is not a directory and cannot become one is refused here, so check-config sees it too."""
    if not text:
        return None
    path = Path(text)
    problem = directory_problem(path)
    if problem is not None:
        raise ConfigError("metadata.log.dir", text, problem)
    return path
