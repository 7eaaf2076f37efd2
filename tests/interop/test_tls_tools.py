"""Kafka's Java TopicCommand through the proxy's TLS listeners, with the PKCS12 stores of `envelope-proxy certs`.

Only the Kafka jars are needed (no Kafka node): the proxy runs in front of the embedded controller.
"""

from pathlib import Path

import pytest
import trio

from devkit.kafka_jars import ensure_kafka_jars, java_command
from devkit.tooling import ToolingMissing
from envelope_proxy.dev_pki import DevPki
from envelope_proxy.embedded import EmbeddedStack
from proxy.net.sasl.jaas import SCRAM_LOGIN_MODULE
from tests.integration.test_tls import PASSWORD, USERS, address, changes, client
from tests.integration.test_tls import pki as pki  # fixtures: the PKI, and the proxy with CLIENT (SASL_SSL, SCRAM)
from tests.integration.test_tls import tls_stack as tls_stack  # and MTLS (SSL, certificates mapped by a RULE)
from tests.interop.test_kafka_tools import TOPICS, _run

pytestmark = pytest.mark.interop


def _jars() -> Path:
    try:
        return ensure_kafka_jars()
    except ToolingMissing as exc:
        pytest.skip(str(exc))


def _topic_command(jars: Path, bootstrap: str, config: Path, topic: str) -> tuple[int, str]:
    done = _run(
        [
            *java_command(f"{jars}/*"),
            TOPICS,
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            str(config),
            "--create",
            "--topic",
            topic,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
        config.parent,
    )
    return done.returncode, done.stdout + done.stderr


async def test_topic_command_over_sasl_ssl_and_mtls(tls_stack: EmbeddedStack, pki: DevPki, tmp_path: Path) -> None:
    jars = _jars()
    truststore = f"ssl.truststore.type=PKCS12\nssl.truststore.location={pki.truststore_p12}\nssl.truststore.password={PASSWORD}\n"
    sasl = tmp_path / "sasl-ssl.properties"
    sasl.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM_LOGIN_MODULE} required username="admin" password="{USERS["admin"]}";\n' + truststore
    )
    mtls = tmp_path / "mtls.properties"
    mtls.write_text(
        "security.protocol=SSL\n"
        f"ssl.keystore.type=PKCS12\nssl.keystore.location={client(pki, 'alice').p12}\nssl.keystore.password={PASSWORD}\n" + truststore
    )

    def work() -> list[tuple[int, str]]:
        return [
            _topic_command(jars, address(tls_stack, "CLIENT"), sasl, "java-sasl-ssl"),
            _topic_command(jars, address(tls_stack, "MTLS"), mtls, "java-mtls"),
        ]

    (sasl_code, sasl_out), (mtls_code, mtls_out) = await trio.to_thread.run_sync(work)
    assert (sasl_code, "Created topic java-sasl-ssl." in sasl_out) == (0, True), sasl_out
    assert (mtls_code, "Created topic java-mtls." in mtls_out) == (0, True), mtls_out
    seen = changes(tls_stack)
    assert ("CreateTopics", "User:admin", "User:proxy", "topic:java-sasl-ssl", 0) in seen
    assert ("CreateTopics", "User:alice", "User:proxy", "topic:java-mtls", 0) in seen
