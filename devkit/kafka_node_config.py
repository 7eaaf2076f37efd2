"""What a Kafka node of the interop tests is configured with: its users, its server.properties, its logging.

A combined KRaft node with SASL_PLAINTEXT BROKER and CONTROLLER listeners,
PLAIN users admin/proxy/alice/bob, the StandardAuthorizer, User:admin (and,
unless told otherwise, User:proxy) as super users, delegation tokens on, and
every replication setting at one; plus the JAAS lines and the properties file
format Kafka reads, and the log4j2 setup its log is written with.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from proxy.net.sasl.login_modules import plain_jaas

DEFAULT_USERS: dict[str, str] = {"admin": "admin-secret", "proxy": "proxy-secret", "alice": "alice-secret", "bob": "bob-secret"}
DELEGATION_TOKEN_SECRET = "kafka-envelope-proxy-interop"
"""`delegation.token.secret.key` of every node: delegation tokens are enabled (KIP-48)."""
NODE_USER = "admin"
"""The principal the node itself uses on its BROKER and CONTROLLER listeners (a super user)."""


def new_cluster_id() -> str:
    """A Kafka Uuid in its base64url form (what `kafka-storage random-uuid` prints); Kafka avoids a leading '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def plain_client_properties(path: Path, user: str, password: str) -> Path:
    """A Java client's `--command-config` file at `path`: SASL_PLAINTEXT, a PLAIN login as `user`."""
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={plain_jaas(username=user, password=password)}\n")
    return path


def render_properties(props: dict[str, str]) -> str:
    lines = []
    for key, value in props.items():
        if any(ch in value for ch in "\\\n\r") or any(ch in key for ch in " =:\\\n"):
            raise ValueError(f"property {key!r} needs escaping; keep keys and values simple")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


LOG4J2_PROPERTIES = """\
status = warn
name = kafka-envelope-proxy-interop
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
# denials at INFO, grants at DEBUG
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def server_properties(
    *,
    node_id: int,
    host: str,
    broker_port: int,
    controller_port: int,
    users: dict[str, str],
    proxy_super_user: bool,
    voters: str | None,
    data: Path,
    extra_properties: dict[str, str],
) -> dict[str, str]:
    """The server.properties of one combined node; `voters` names a static quorum, else it bootstraps alone (--standalone)."""
    user_entries = {f"user_{name}": password for name, password in users.items()}
    jaas = plain_jaas(username=NODE_USER, password=users[NODE_USER], **user_entries)
    super_users = [f"User:{NODE_USER}"] + (["User:proxy"] if proxy_super_user else [])
    broker = f"{host}:{broker_port}"
    controller = f"{host}:{controller_port}"
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "listeners": f"BROKER://{broker},CONTROLLER://{controller}",
        "advertised.listeners": f"BROKER://{broker},CONTROLLER://{controller}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "BROKER",
        "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.broker.plain.sasl.jaas.config": jaas,
        "listener.name.controller.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": ";".join(super_users),
        # --standalone (KIP-853 dynamic quorum) wants bootstrap servers; a static quorum names its voters
        **({"controller.quorum.voters": voters} if voters else {"controller.quorum.bootstrap.servers": controller}),
        "log.dirs": str(data),
        "metadata.log.dir": str(data),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # No no-op records in the metadata log (KIP-835; one each 500 ms by default): a test's node sits idle between
        # tests for minutes, and with them it took 2.8% of a core, without them 1.7%.
        "metadata.max.idle.interval.ms": "0",
        "auto.create.topics.enable": "false",
        # delegation tokens on, as the differential suite compares them; nothing else changes with it
        "delegation.token.secret.key": DELEGATION_TOKEN_SECRET,
        **extra_properties,
    }
