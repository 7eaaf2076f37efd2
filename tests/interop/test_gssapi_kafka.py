"""GSSAPI against a real MIT KDC and a real Kafka 4.3.1 node: the Java AdminClient and Kafka's CLI tools log in to the
proxy with Kerberos, and the proxy logs in with its own keytab to the node's CONTROLLER listener, which has GSSAPI.

The node (one for this module) keeps SASL/PLAIN for its own broker-to-controller link and for the test's direct
reads; its BROKER listener (for direct Kerberos clients, to compare with) and CONTROLLER listener also enable GSSAPI with the service key kafka/localhost and the same
principal.to.local rules as the proxy. Everything talks to `localhost`, the host the service principal names.
confluent-kafka cannot take part: its wheel's librdkafka is built without GSSAPI (`builtin.features` lacks
sasl_gssapi; asking for it fails with "No provider for SASL mechanism GSSAPI ... Current build options: PLAIN SASL_SCRAM
OAUTHBEARER"), checked below so the note stays true.
"""

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from devkit.kafka_jars import java_command
from devkit.kafka_node import KafkaNode
from envelope_proxy.embedded import proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from tests.conftest import SERVICE, SERVICE_HOST, Realm
from tests.integration.conftest import audit_records
from tests.interop.conftest import _kafka_lib
from tests.interop.test_conformance import unique
from tests.interop.upstreams import poll

pytestmark = pytest.mark.interop

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
RULES = "RULE:[2:$1-$2@$0]([^@]*@ENVELOPE[.]TEST)s/@.*//, DEFAULT"  # no backslash: it goes into server.properties as is
JAVA_SOURCE = Path(__file__).parent / "java" / "ConfiguredAdmin.java"
TOPICS = "org.apache.kafka.tools.TopicCommand"
TOOL_TIMEOUT = 180.0


def server_jaas(realm: Realm) -> str:
    return f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.service_keytab}" principal="{realm.service_principal}";'


def client_jaas(realm: Realm, who: str) -> str:
    return f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.keytabs[who]}" principal="{realm.principals[who]}";'


@pytest.fixture(scope="module")
def kerberos_node(tmp_path_factory: pytest.TempPathFactory, kerberos_realm: Realm) -> Iterator[KafkaNode]:
    lib = _kafka_lib("a Kafka node with GSSAPI")
    extra = {
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN,GSSAPI",
        "listener.name.controller.gssapi.sasl.jaas.config": server_jaas(kerberos_realm),
        "listener.name.broker.sasl.enabled.mechanisms": "PLAIN,GSSAPI",  # direct clients, to compare
        "listener.name.broker.gssapi.sasl.jaas.config": server_jaas(kerberos_realm),
        "sasl.kerberos.service.name": SERVICE,
        "sasl.kerberos.principal.to.local.rules": RULES,
    }
    timeout = float(os.environ.get("KAFKA_NODE_STARTUP_TIMEOUT", "120"))
    node = KafkaNode(
        workdir=tmp_path_factory.mktemp("kafka-gssapi"),
        lib_dir=lib,
        host=SERVICE_HOST,
        startup_timeout=timeout,
        extra_properties=extra,
        jvm_options=(f"-Djava.security.krb5.conf={kerberos_realm.kdc.krb5_conf}",),
    )
    with node:
        yield node


@pytest.fixture
async def gssapi_proxy(nursery: Any, tmp_path: Path, kerberos_node: KafkaNode, kerberos_realm: Realm) -> Any:
    realm = kerberos_realm
    port = int(kerberos_node.controller_address.rsplit(":", 1)[1])
    props = proxy_properties(port, tmp_path / "audit")
    props.update(
        {
            "controller.quorum.bootstrap.servers": kerberos_node.controller_address,
            "listener.name.client.sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.client.gssapi.sasl.jaas.config": server_jaas(realm),
            "sasl.kerberos.service.name": SERVICE,
            "sasl.kerberos.principal.to.local.rules": RULES,
            "sasl.mechanism.controller.protocol": "GSSAPI",
            "listener.name.controller.gssapi.sasl.jaas.config": client_jaas(realm, "proxy"),
        }
    )
    props.pop("listener.name.controller.plain.sasl.jaas.config")
    return await nursery.start(run_proxy, parse_proxy_config(props))


def _client_properties(directory: Path, realm: Realm, who: str, bootstrap: str) -> Path:
    path = directory / f"{who}.properties"
    path.write_text(
        f"bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
        f"sasl.kerberos.service.name={SERVICE}\nsasl.jaas.config={client_jaas(realm, who)}\ndefault.api.timeout.ms=60000\n"
    )
    return path


def _java(realm: Realm, classpath: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*java_command(classpath, options=(f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}",)), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT, cwd=cwd, check=False)


def _topic_exists(node: KafkaNode, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(node.client_config("admin")).list_topics(timeout=10)
    return topic in metadata.topics


def _grant(node: KafkaNode, *bindings: Any) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(node.client_config("admin"))  # kept: the futures need their client alive
    for future in admin.create_acls(list(bindings)).values():
        future.result(timeout=30)


def _acls(allowed: str, other_host: str) -> list[Any]:
    """alice may create topics starting with `allowed` from any host and those starting with `other_host` only from
    127.0.0.2 (the tests connect from 127.0.0.1); bob-admin may create any topic; carol nothing. The node's
    authorizer decides for the proxy's forwarded principal and address as for a direct client."""
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    create, allow = AclOperation.CREATE, AclPermissionType.ALLOW
    return [
        AclBinding(ResourceType.TOPIC, allowed, ResourcePatternType.PREFIXED, "User:alice", "*", create, allow),
        AclBinding(ResourceType.TOPIC, other_host, ResourcePatternType.PREFIXED, "User:alice", "127.0.0.2", create, allow),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:bob-admin", "*", create, allow),
    ]


async def test_java_clients_log_in_with_kerberos_and_get_kafkas_decisions(
    gssapi_proxy: Any, kerberos_node: KafkaNode, kerberos_realm: Realm, tmp_path: Path
) -> None:
    """The same programs with the same keytabs, through the proxy and straight to the node's broker listener (which
    has GSSAPI too): the same outcomes, and through the proxy the audit names both the short and the Kerberos name."""
    realm = kerberos_realm
    if shutil.which("javac") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("javac not installed (required when CI=true)")
        pytest.skip("javac not installed: the Java AdminClient program cannot be compiled")
    lib = f"{_kafka_lib('the Java AdminClient')}/*"
    proxy = f"{SERVICE_HOST}:{gssapi_proxy.listener('CLIENT').port}"
    direct = kerberos_node.broker_address
    classes = tmp_path / "classes"
    alice_prefix, other_host_prefix = unique("krb-alice"), unique("krb-other-host")
    _grant(kerberos_node, *_acls(alice_prefix, other_host_prefix))

    def run(who: str, bootstrap: str, *topics: str) -> list[str]:
        config = _client_properties(tmp_path / bootstrap.replace(":", "-"), realm, who, bootstrap)
        done = _java(realm, f"{lib}:{classes}", "ConfiguredAdmin", str(config), *topics, cwd=tmp_path)
        outcomes = [line.split(" ", 1)[1] for line in done.stdout.splitlines() if line.split(" ", 1)[0] in topics]
        return outcomes or [done.stderr[-2000:]]

    def work() -> dict[str, Any]:
        compiled = subprocess.run(["javac", "-cp", lib, "-d", str(classes), str(JAVA_SOURCE)], capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)
        assert compiled.returncode == 0, compiled.stderr
        seen: dict[str, Any] = {}
        for path, bootstrap in (("proxy", proxy), ("direct", direct)):
            (tmp_path / bootstrap.replace(":", "-")).mkdir()
            seen[f"{path} alice"] = run("alice", bootstrap, f"{alice_prefix}-{path}", f"{other_host_prefix}-{path}")
            seen[f"{path} bob/admin"] = run("bob-admin", bootstrap, unique("krb-renamed"))
            seen[f"{path} carol"] = run("carol", bootstrap, unique("krb-carol"))
        config = _client_properties(tmp_path, realm, "alice", proxy)
        topic = f"{alice_prefix}-cli"
        args = ["--bootstrap-server", proxy, "--command-config", str(config), "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1"]
        done = _java(realm, lib, TOPICS, *args, cwd=tmp_path)
        seen["cli alice"] = (done.returncode, f"Created topic {topic}." in done.stdout + done.stderr, poll(lambda: _topic_exists(kerberos_node, topic), bool, 30))
        return seen

    seen = await trio.to_thread.run_sync(work)
    expected = {"alice": ["OK", "TopicAuthorizationException"], "bob/admin": ["OK"], "carol": ["TopicAuthorizationException"]}
    assert seen == {
        **{f"{path} {who}": outcome for path in ("proxy", "direct") for who, outcome in expected.items()},
        "cli alice": (0, True, True),
    }
    records = audit_records(tmp_path / "audit")
    intents = [r["data"]["authenticationInfo"] for r in records if r["data"]["stage"] == "intent"]
    names = {(info["principal"], info.get("authenticationId")) for info in intents}
    assert names == {("User:alice", "alice@ENVELOPE.TEST"), ("User:bob-admin", "bob/admin@ENVELOPE.TEST"), ("User:carol", "carol@ENVELOPE.TEST")}
    assert {r["data"]["forwardingPrincipal"] for r in records if r["data"]["stage"] == "intent"} == {"User:proxy"}


def test_confluent_kafkas_wheel_has_no_gssapi() -> None:
    import confluent_kafka

    # librdkafka names its build options in the error: PLAIN SASL_SCRAM OAUTHBEARER (no libsasl2, so no GSSAPI)
    with pytest.raises(confluent_kafka.KafkaException, match="No provider for SASL mechanism GSSAPI"):
        confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI"})
