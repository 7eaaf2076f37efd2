"""GSSAPI against a real MIT KDC and a real Kafka 4.3.1 node: the Java AdminClient and Kafka's CLI tools log in to the
proxy with Kerberos, and the proxy logs in with its own keytab to the node's CONTROLLER listener, which has GSSAPI.

The node (one for this module) keeps SASL/PLAIN for its own broker-to-controller link and for the test's direct
reads; its CONTROLLER listener also enables GSSAPI with the service key kafka/localhost and the same
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

from envelope_proxy.embedded import proxy_properties
from proxy.app import run_proxy
from proxy.config import parse_proxy_config
from tests.conftest import SERVICE, SERVICE_HOST, Realm
from tests.integration.conftest import audit_records
from tests.interop.conftest import _kafka_lib
from tests.interop.kafka_node import KafkaNode
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
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}", "-cp", classpath, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT, cwd=cwd, check=False)


def _topic_exists(node: KafkaNode, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(node.client_config("admin")).list_topics(timeout=10)
    return topic in metadata.topics


def _grant_create(node: KafkaNode, principal: str) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    binding = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, principal, "*", AclOperation.CREATE, AclPermissionType.ALLOW)
    admin = AdminClient(node.client_config("admin"))  # kept: the futures need their client alive
    for future in admin.create_acls([binding]).values():
        future.result(timeout=30)


async def test_java_admin_client_and_cli_tools_log_in_with_kerberos(
    gssapi_proxy: Any, kerberos_node: KafkaNode, kerberos_realm: Realm, tmp_path: Path
) -> None:
    realm = kerberos_realm
    if shutil.which("javac") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("javac not installed (required when CI=true)")
        pytest.skip("javac not installed: the Java AdminClient program cannot be compiled")
    lib = f"{_kafka_lib('the Java AdminClient')}/*"
    bootstrap = f"{SERVICE_HOST}:{gssapi_proxy.listener('CLIENT').port}"
    classes = tmp_path / "classes"
    java_topic, cli_topic, renamed_topic, denied_topic = unique("krb-java"), unique("krb-cli"), unique("krb-renamed"), unique("krb-denied")

    def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        _grant_create(kerberos_node, "User:alice")  # the node's ACLs decide, for the short names the proxy forwards
        _grant_create(kerberos_node, "User:bob-admin")
        compiled = subprocess.run(["javac", "-cp", lib, "-d", str(classes), str(JAVA_SOURCE)], capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)
        assert compiled.returncode == 0, compiled.stderr
        done = _java(realm, f"{classes}:{lib}", "ConfiguredAdmin", str(_client_properties(tmp_path, realm, "alice", bootstrap)), java_topic, cwd=tmp_path)
        seen["java alice"] = done.stdout.strip() or done.stderr[-2000:]
        done = _java(realm, f"{classes}:{lib}", "ConfiguredAdmin", str(_client_properties(tmp_path, realm, "bob-admin", bootstrap)), renamed_topic, cwd=tmp_path)
        seen["java bob/admin"] = done.stdout.strip() or done.stderr[-2000:]
        done = _java(realm, f"{classes}:{lib}", "ConfiguredAdmin", str(_client_properties(tmp_path, realm, "carol", bootstrap)), denied_topic, cwd=tmp_path)
        seen["java carol"] = done.stdout.strip().split(":")[0]
        config = _client_properties(tmp_path, realm, "alice", bootstrap)
        args = ["--bootstrap-server", bootstrap, "--command-config", str(config), "--create", "--topic", cli_topic, "--partitions", "1", "--replication-factor", "1"]
        done = _java(realm, lib, TOPICS, *args, cwd=tmp_path)
        seen["cli alice"] = (done.returncode, f"Created topic {cli_topic}." in done.stdout + done.stderr)
        for topic in (java_topic, cli_topic, renamed_topic):
            seen[f"exists {topic}"] = poll(lambda t=topic: _topic_exists(kerberos_node, t), bool, 30)
        seen[f"exists {denied_topic}"] = _topic_exists(kerberos_node, denied_topic)
        return seen

    seen = await trio.to_thread.run_sync(work)
    assert seen == {
        "java alice": "create OK",
        "java bob/admin": "create OK",
        "java carol": "create TopicAuthorizationException",
        "cli alice": (0, True),
        f"exists {java_topic}": True,
        f"exists {cli_topic}": True,
        f"exists {renamed_topic}": True,
        f"exists {denied_topic}": False,
    }
    records = audit_records(tmp_path / "audit")
    intents = {r["subject"]: r["data"]["authenticationInfo"] for r in records if r["data"]["stage"] == "intent"}
    assert intents[f"topic:{java_topic}"]["principal"] == "User:alice"
    assert intents[f"topic:{java_topic}"]["authenticationId"] == "alice@ENVELOPE.TEST"
    assert intents[f"topic:{renamed_topic}"] == {**intents[f"topic:{renamed_topic}"], "principal": "User:bob-admin", "authenticationId": "bob/admin@ENVELOPE.TEST"}
    assert intents[f"topic:{denied_topic}"]["principal"] == "User:carol"
    forwarded = {r["data"]["forwardingPrincipal"] for r in records if r["data"]["stage"] == "intent"}
    assert forwarded == {"User:proxy"}


def test_confluent_kafkas_wheel_has_no_gssapi() -> None:
    import confluent_kafka

    # librdkafka names its build options in the error: PLAIN SASL_SCRAM OAUTHBEARER (no libsasl2, so no GSSAPI)
    with pytest.raises(confluent_kafka.KafkaException, match="No provider for SASL mechanism GSSAPI"):
        confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI"})
