"""Configuration errors name the key, the value and the reason."""

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from controller.config import parse_controller_config
from envelope_proxy.embedded import controller_properties, proxy_properties
from proxy.audit.sinks import file as audit_file
from proxy.audit.sinks import kafka as audit_kafka
from proxy.audit.sinks.file import FileSinkSettings
from proxy.config import parse_proxy_config
from proxy.net.sasl.jaas_parser import parse_jaas
from proxy.net.sasl.plain import PlainServer
from proxy.net.sasl.scram_mechanism import ScramServerSide
from proxy.properties import ConfigError

if TYPE_CHECKING:
    from envelope_proxy.dev_pki import DevPki


def test_the_embedded_defaults_parse() -> None:
    config = parse_proxy_config(proxy_properties(9093, Path("/tmp/audit")))
    assert [item.name for item in config.listeners] == ["CLIENT", "PLAIN"]
    plain = config.listeners[0].sasl_servers["PLAIN"]
    assert isinstance(plain, PlainServer) and plain.users["alice"] == "alice-secret"
    assert config.upstream.username == "proxy"
    assert config.forwarding_principal == "User:proxy"


def test_the_reconnect_backoff_takes_kafkas_keys_and_defaults() -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    upstream = parse_proxy_config(props).upstream
    assert (upstream.backoff_initial, upstream.backoff_max) == (0.05, 1.0)
    config = parse_proxy_config({**props, "reconnect.backoff.ms": "100", "reconnect.backoff.max.ms": "5000", "read.bootstrap.servers": "b:9092"})
    assert (config.upstream.backoff_initial, config.upstream.backoff_max) == (0.1, 5.0)
    assert config.read_upstream is not None and config.read_upstream.backoff_max == 5.0  # reads connect the same way
    assert (config.effective()["controller"]["reconnect.backoff.ms"], config.effective()["controller"]["reconnect.backoff.max.ms"]) == (100, 5000)


def test_every_quorum_address_is_used_in_order_with_the_voters_ids() -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    props["controller.quorum.bootstrap.servers"] = " 127.0.0.1:9001, [::1]:9002 ,localhost:9003"
    bootstrap = parse_proxy_config(props).upstream
    assert [(s.host, s.port, s.node_id) for s in bootstrap.servers] == [("127.0.0.1", 9001, None), ("::1", 9002, None), ("localhost", 9003, None)]
    assert bootstrap.servers_key == "controller.quorum.bootstrap.servers" and bootstrap.discover
    del props["controller.quorum.bootstrap.servers"]
    props["controller.quorum.voters"] = "3@127.0.0.1:9001,1@[::1]:9002"
    voters = parse_proxy_config(props).upstream
    assert [(s.host, s.port, s.node_id) for s in voters.servers] == [("127.0.0.1", 9001, 3), ("::1", 9002, 1)]
    assert voters.address == "3@127.0.0.1:9001,1@[::1]:9002"
    props["read.bootstrap.servers"] = "127.0.0.1:9092,127.0.0.1:9094"
    reads = parse_proxy_config(props).read_upstream
    assert reads is not None and not reads.discover and [s.port for s in reads.servers] == [9092, 9094]


@pytest.mark.parametrize(
    ("changes", "key", "reason"),
    [
        ({"listeners": "CLIENT://127.0.0.1:1,CLIENT://127.0.0.1:2"}, "listeners", "CLIENT appears twice"),
        ({"listeners": "CLIENT://127.0.0.1:1,PLAIN://127.0.0.1:1"}, "listeners", "port 1 is used by CLIENT, PLAIN"),
        ({"listeners": "OTHER://127.0.0.1:1"}, "listener.security.protocol.map", "no security protocol defined for listener OTHER"),
        ({"listeners": "CLIENT:/127.0.0.1:1"}, "listeners", "is not of the form NAME://host:port"),
        ({"listeners": "CLIENT://127.0.0.1:70000"}, "listeners", "out of range"),
        ({"advertised.listeners": "NOPE://h:1"}, "advertised.listeners", "NOPE is not among listeners"),
        ({"advertised.listeners": "CLIENT://0.0.0.0:1"}, "advertised.listeners", "wildcard address"),
        ({"sasl.enabled.mechanisms": "KERBEROS"}, "sasl.enabled.mechanisms", "KERBEROS is not supported"),
        ({"node.id": "abc"}, "node.id", "expected an integer"),
        ({"node.id": None}, "node.id", "is required"),
        ({"request.timeout.ms": "0"}, "request.timeout.ms", "at least 1"),
        ({"sasl.mechanism.controller.protocol": "NTLM"}, "sasl.mechanism.controller.protocol", "mechanism NTLM is not supported for the proxy's own login"),
        (
            {"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:BOGUS"},
            "listener.security.protocol.map",
            "unknown security protocol",
        ),
        ({"controller.quorum.bootstrap.servers": "nohost"}, "controller.quorum.bootstrap.servers", "'nohost' is not host:port"),
        ({"controller.quorum.bootstrap.servers": "a:1,,b:2"}, "controller.quorum.bootstrap.servers", "has an empty entry"),
        ({"controller.quorum.bootstrap.servers": "a:0"}, "controller.quorum.bootstrap.servers", "outside 1-65535"),
        ({"controller.quorum.bootstrap.servers": None}, "controller.quorum.bootstrap.servers", "is required (or controller.quorum.voters)"),
        ({"controller.quorum.voters": "1@a:1"}, "controller.quorum.bootstrap.servers", "not both"),
        ({"controller.quorum.bootstrap.servers": None, "controller.quorum.voters": "a:1"}, "controller.quorum.voters", "not id@host:port"),
        ({"controller.quorum.bootstrap.servers": None, "controller.quorum.voters": "x@a:1"}, "controller.quorum.voters", "not a non-negative integer"),
        ({"controller.quorum.bootstrap.servers": None, "controller.quorum.voters": "1@a:1,1@b:2"}, "controller.quorum.voters", "more than once"),
        ({"controller.connections": "0"}, "controller.connections", "must be at least 1"),
        ({"controller.forward.timeout.ms": "soon"}, "controller.forward.timeout.ms", "integer"),
        ({"reconnect.backoff.ms": "0"}, "reconnect.backoff.ms", "must be at least 1: with no wait"),
        ({"reconnect.backoff.ms": "50ms"}, "reconnect.backoff.ms", "expected an integer"),
        ({"reconnect.backoff.max.ms": "-1"}, "reconnect.backoff.max.ms", "must be at least 0"),
        (
            {"security.inter.broker.protocol": "PLAINTEXT", "inter.broker.listener.name": "CLIENT"},
            "inter.broker.listener.name",
            "only one of",
        ),
        ({"socket.reuse.port": "yes"}, "socket.reuse.port", "expected true or false"),
        # found by an outside check of the docs: each was accepted, or failed later with a traceback
        ({"node.id": "2147483648"}, "node.id", "must be at most 2147483647"),
        ({"socket.request.max.bytes": "99999999999"}, "socket.request.max.bytes", "must be at most 2147483647"),
        ({"super.users": "User:proxy;admin"}, "super.users", "expected a string in format principalType:principalName but got admin"),
        ({"reconnect.backoff.ms": "-5"}, "reconnect.backoff.ms", "must be at least 1"),
        ({"sasl.enabled.mechanisms": ""}, "sasl.enabled.mechanisms", "no SASL mechanism is enabled, and listener CLIENT needs at least one"),
        ({"audit.log.dir": "/etc/hostname"}, "audit.log.dir", "is not a directory"),
        ({"audit.log.dir": "/etc/hostname/audit"}, "audit.log.dir", "cannot create it: /etc/hostname is not a directory"),
        # the audit pipeline
        ({"audit.durability": "always"}, "audit.durability", "expected one of none, flush, fsync"),
        ({"audit.on.failure": "drop"}, "audit.on.failure", "expected one of block, reject"),
        ({"audit.connection.events": "some"}, "audit.connection.events", "expected one of all, failures, none"),
        ({"audit.file.max.bytes": "0"}, "audit.file.max.bytes", "at least 1"),
        ({"audit.file.rotate.ms": "-1"}, "audit.file.rotate.ms", "at least 0"),
        ({"audit.sinks": "file,syslog"}, "audit.sinks", "unknown sink 'syslog'"),
        ({"audit.sinks": ","}, "audit.sinks", "needs at least one of file, kafka"),
        ({"audit.excluded.principals": "User:CN=a,OU=b"}, "audit.excluded.principals", "'OU=b' is not of the form Type:name"),
        ({"audit.sinks": "kafka"}, "audit.kafka.bootstrap.servers", "is required"),
        ({"audit.kafka.bootstrap.servers": "k:9092"}, "audit.sinks", "audit.kafka.* keys are set but kafka is not among the sinks"),
        ({"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": "k:9092", "audit.kafka.topic": "a/b"}, "audit.kafka.topic", "a Kafka topic name"),
        (
            {"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": "k:9092", "audit.kafka.delivery.timeout.ms": "0"},
            "audit.kafka.delivery.timeout.ms",
            "at least 1",
        ),
        (
            {"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": "k:9092", "audit.kafka.producer.acks": "1"},
            "audit.kafka.producer.acks",
            "acks=all",
        ),
        (
            {"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": "k:9092", "audit.kafka.producer.no.such.thing": "1"},
            "audit.kafka.producer.no.such.thing",
            'librdkafka: No such configuration property: "no.such.thing"',
        ),
        (
            {"audit.sinks": "kafka", "audit.kafka.bootstrap.servers": "k:9092", "audit.kafka.producer.linger.ms": "soon"},
            "audit.kafka.producer.linger.ms",
            "librdkafka: Invalid value",
        ),
    ],
)
def test_bad_proxy_config_names_key_value_and_reason(changes: dict[str, str | None], key: str, reason: str) -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    for name, value in changes.items():
        if value is None:
            props.pop(name, None)
        else:
            props[name] = value
    with pytest.raises(ConfigError) as error:
        parse_proxy_config(props)
    assert error.value.key == key
    assert reason in str(error.value)
    assert f"for configuration {key}" in str(error.value)


def test_audit_settings_defaults_and_a_kafka_sink(tmp_path: Path) -> None:
    default = parse_proxy_config(proxy_properties(9093, tmp_path / "audit")).audit
    assert (default.sinks, default.durability, default.on_failure, default.connection_events) == (("file",), "flush", "block", "all")
    assert default.of(audit_file.KIND) == FileSinkSettings(64 * 1024 * 1024, 300.0) and default.of(audit_kafka.KIND) is None
    props = {
        **proxy_properties(9093, tmp_path / "audit"),
        "audit.sinks": "file, kafka",
        "audit.durability": "FSYNC",
        "audit.file.rotate.ms": "0",
        "audit.excluded.principals": "User:monitor;User:CN=a,OU=b",  # ';' when a name holds ','
        "audit.kafka.bootstrap.servers": "k1:9092,k2:9092",
        "audit.kafka.producer.security.protocol": "SASL_SSL",
        "audit.kafka.producer.sasl.mechanism": "PLAIN",
        "audit.kafka.producer.sasl.username": "auditor",
        "audit.kafka.producer.sasl.password": "s3cret",
    }
    config = parse_proxy_config(props)
    audit = config.audit
    file_settings, kafka = audit.of(audit_file.KIND), audit.of(audit_kafka.KIND)
    assert audit.sinks == ("file", "kafka") and audit.durability == "fsync" and file_settings is not None and file_settings.rotate is None
    assert audit.excluded_principals == frozenset({"User:monitor", "User:CN=a,OU=b"})
    assert kafka is not None and kafka.topic == "envelope-proxy-audit"
    assert kafka.spool_dir == tmp_path / "audit" / ".kafka-spool"
    assert kafka.producer["sasl.username"] == "auditor"
    shown = config.effective()["audit"]
    assert shown["kafka"]["producer"]["sasl.password"] == "[hidden]" and "s3cret" not in str(config.effective())
    comma = parse_proxy_config({**proxy_properties(9093, tmp_path), "audit.excluded.principals": "User:a, User:b"}).audit
    assert comma.excluded_principals == frozenset({"User:a", "User:b"})


def test_one_ipv4_and_one_ipv6_literal_may_share_a_port() -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    props["listeners"] = "CLIENT://127.0.0.1:19000,PLAIN://[::1]:19000"
    config = parse_proxy_config(props)
    assert [(item.host, item.port) for item in config.listeners] == [("127.0.0.1", 19000), ("::1", 19000)]


def test_controller_config_reads_super_users_separated_by_semicolons() -> None:
    props = controller_properties(super_users="User:proxy;User:CN=a,OU=b")
    config = parse_controller_config(props)
    assert config.super_users == frozenset({"User:proxy", "User:CN=a,OU=b"})
    assert config.allow_everyone_if_no_acl_found is False


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("node.id", "99999999999", "must be at most 2147483647"),
        ("super.users", "admin", "expected a string in format principalType:principalName but got admin"),
        ("metadata.log.dir", "/etc/hostname", "is not a directory"),
        ("metadata.log.dir", "/etc/hostname/metadata", "cannot create it: /etc/hostname is not a directory"),
    ],
)
def test_bad_controller_config_names_key_value_and_reason(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_controller_config({**controller_properties(), key: value})
    assert (error.value.key, error.value.value) == (key, value)
    assert reason in str(error.value)


def test_controller_needs_the_controller_role() -> None:
    props = controller_properties()
    props["process.roles"] = "broker"
    with pytest.raises(ConfigError, match=r"process\.roles"):
        parse_controller_config(props)


def test_jaas_secrets_never_appear_in_errors() -> None:
    with pytest.raises(ConfigError) as error:
        parse_jaas("listener.name.client.plain.sasl.jaas.config", 'PlainLoginModule required user_a="s3cret" broken')
    assert "s3cret" not in str(error.value)


def test_check_config_exits_2_with_the_message(tmp_path: Path) -> None:
    path = tmp_path / "proxy.properties"
    props = proxy_properties(9093, tmp_path)
    props["listeners"] = "CLIENT://127.0.0.1:1,CLIENT://127.0.0.1:2"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "Invalid value 'CLIENT://127.0.0.1:1,CLIENT://127.0.0.1:2' for configuration listeners" in result.stderr


def test_check_config_prints_effective_settings_with_secrets_masked(tmp_path: Path) -> None:
    path = tmp_path / "proxy.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in proxy_properties(9093, tmp_path).items()))
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert '"alice": "[hidden]"' in result.stdout
    assert "alice-secret" not in result.stdout and "proxy-secret" not in result.stdout


# -- SASL/SCRAM, IP filter, connection limits, privileged principals ---------------------------

_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SUPPORTED = "(supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI)"
_NO_GSSAPI_LOGIN = (
    "listener CLIENT uses GSSAPI but neither listener.name.client.gssapi.sasl.jaas.config nor a JAAS file "
    "(jaas.config.file, or -Djava.security.auth.login.config= in KAFKA_OPTS) is set"
)


def _credentials_file(tmp_path: Path) -> str:
    from proxy.net.sasl.credentials import add_user

    path = tmp_path / "scram.json"
    add_user(path, "alice", "alice-scram", ["SCRAM-SHA-256"])
    return str(path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, _NO_GSSAPI_LOGIN),
        (
            {"listener.name.client.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-1"},
            "Invalid value 'PLAIN,SCRAM-SHA-1' for configuration listener.name.client.sasl.enabled.mechanisms: "
            f"mechanism SCRAM-SHA-1 is not supported {_SUPPORTED}",
        ),
        ({"sasl.enabled.mechanisms": None}, _NO_GSSAPI_LOGIN),  # Kafka's default
        (
            {"sasl.enabled.mechanisms": "SCRAM-SHA-256"},
            "Invalid value None for configuration sasl.scram.credentials.file: listener CLIENT enables SCRAM-SHA-256 "
            "but names no credentials file (create one with envelope-proxy scram add-user)",
        ),
        (
            {"sasl.enabled.mechanisms": "SCRAM-SHA-512", "sasl.scram.credentials.file": "/nonexistent/scram.json"},
            "Invalid value '/nonexistent/scram.json' for configuration sasl.scram.credentials.file: the file does not exist",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.scram.credentials.file": "{credentials}",
                "listener.name.client.sasl.scram.credentials.file": "{broken}",
            },
            "Invalid value '{broken}' for configuration listener.name.client.sasl.scram.credentials.file: "
            "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "sasl.scram.credentials.file": "{credentials}",
                "listener.name.client.scram-sha-256.sasl.jaas.config": f"{_PLAIN_MODULE} required;",
            },
            f"listener.name.client.scram-sha-256.sasl.jaas.config: SCRAM-SHA-256 needs the login module {_SCRAM_MODULE}, found {_PLAIN_MODULE}",
        ),
        (
            {"security.ip.filter.rule.type": "block", "security.ip.filter.list": "10.0.0.0/8"},
            "Invalid value 'block' for configuration security.ip.filter.rule.type: must be allow or deny",
        ),
        (
            {"security.ip.filter.rule.type": "allow", "security.ip.filter.list": "10.0.0.0/33"},
            "Invalid value '10.0.0.0/33' for configuration security.ip.filter.list: '10.0.0.0/33' has prefix length /33; the maximum for IPv4 is /32",
        ),
        (
            {"security.ip.filter.rule.type": "deny", "security.ip.filter.list": "10.0.0.0/8", "listener.name.plain.security.ip.filter.list": "nope"},
            "Invalid value 'nope' for configuration listener.name.plain.security.ip.filter.list: 'nope' is not an IPv4 or IPv6 address or CIDR range",
        ),
        (
            {"security.ip.filter.rule.type": "deny"},
            "Invalid value None for configuration security.ip.filter.list: is required when security.ip.filter.rule.type is set; "
            "list CIDR ranges such as 10.0.0.0/8,2001:db8::/32",
        ),
        (
            {"security.ip.filter.list": "10.0.0.0/8"},
            "Invalid value None for configuration security.ip.filter.rule.type: is required when security.ip.filter.list is set; use allow or deny",
        ),
        ({"max.connections": "-1"}, "Invalid value '-1' for configuration max.connections: must be at least 0"),
        (
            {"listener.name.client.max.connections": "many"},
            "Invalid value 'many' for configuration listener.name.client.max.connections: expected an integer",
        ),
        (
            {"max.connections.per.ip": "0"},
            "Invalid value '0' for configuration max.connections.per.ip: can be 0 only if max.connections.per.ip.overrides is set",
        ),
        (
            {"max.connections.per.ip.overrides": "myhost:3"},
            "Invalid value 'myhost:3' for configuration max.connections.per.ip.overrides: "
            "entry 'myhost:3': 'myhost' is not an IP address (host names are not resolved; list the addresses)",
        ),
        (
            {"max.connections.per.ip.overrides": "127.0.0.1:x"},
            "Invalid value '127.0.0.1:x' for configuration max.connections.per.ip.overrides: "
            "entry '127.0.0.1:x': count 'x' is not a non-negative integer",
        ),
        (
            {"listener.name.plain.connections.max.idle.ms": "0"},
            "Invalid value '0' for configuration listener.name.plain.connections.max.idle.ms: must be at least 1",
        ),
        (
            {"privileged.principals": "User:proxy;broker"},
            "Invalid value 'User:proxy;broker' for configuration privileged.principals: 'broker' is not of the form Type:name (e.g. User:proxy)",
        ),
        (
            {"sasl.mechanism.controller.protocol": "NTLM"},
            "Invalid value 'NTLM' for configuration sasl.mechanism.controller.protocol: "
            f"mechanism NTLM is not supported for the proxy's own login {_SUPPORTED}",
        ),
        (
            {"sasl.mechanism.controller.protocol": "OAUTHBEARER"},
            "listener CONTROLLER uses OAUTHBEARER but neither listener.name.controller.oauthbearer.sasl.jaas.config nor a JAAS file "
            "(jaas.config.file, or -Djava.security.auth.login.config= in KAFKA_OPTS) is set",
        ),
        (
            {"sasl.mechanism.controller.protocol": "SCRAM-SHA-256"},
            "listener CONTROLLER uses SCRAM-SHA-256 but neither listener.name.controller.scram-sha-256.sasl.jaas.config nor a JAAS file "
            "(jaas.config.file, or -Djava.security.auth.login.config= in KAFKA_OPTS) is set",
        ),
        (
            {
                "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
                "listener.name.controller.scram-sha-512.sasl.jaas.config": f'{_PLAIN_MODULE} required username="p" password="s";',
            },
            f"listener.name.controller.scram-sha-512.sasl.jaas.config: SCRAM-SHA-512 needs the login module {_SCRAM_MODULE}, found {_PLAIN_MODULE}",
        ),
        (
            {
                "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
                "listener.name.controller.scram-sha-512.sasl.jaas.config": f'{_SCRAM_MODULE} required username="p";',
            },
            "Invalid value '[hidden]' for configuration listener.name.controller.scram-sha-512.sasl.jaas.config: "
            "the proxy's login needs username and password options",
        ),
    ],
)
def test_security_config_rejections(tmp_path: Path, changes: dict[str, str | None], message: str) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    paths = {"{credentials}": _credentials_file(tmp_path), "{broken}": str(broken)}
    props = proxy_properties(9093, tmp_path)
    for key, value in changes.items():
        if value is None:
            props.pop(key, None)
        else:
            props[key] = paths.get(value, value)
    with pytest.raises(ConfigError) as error:
        parse_proxy_config(props)
    assert str(error.value) == message.replace("{broken}", str(broken))


def test_scram_and_filters_parse_per_listener(tmp_path: Path) -> None:
    props = proxy_properties(9093, tmp_path)
    props.update(
        {
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "sasl.scram.credentials.file": _credentials_file(tmp_path),
            "security.ip.filter.rule.type": "deny",
            "security.ip.filter.list": "10.0.0.0/8",
            "listener.name.plain.security.ip.filter.rule.type": "allow",
            "max.connections.per.ip": "5",
            "listener.name.plain.max.connections": "7",
            "listener.name.client.connections.max.idle.ms": "1000",
            "privileged.principals": "User:proxy; User:CN=broker,OU=kafka",
            "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
            "listener.name.controller.scram-sha-512.sasl.jaas.config": f'{_SCRAM_MODULE} required username="proxy" password="s";',
        }
    )
    config = parse_proxy_config(props)
    client, plain = config.listeners
    assert client.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-256")
    scram = client.sasl_servers["SCRAM-SHA-256"]
    assert isinstance(scram, ScramServerSide) and scram.credentials.credentials.users() == ["alice"]
    assert client.ip_filter is not None and client.ip_filter.rule_type == "deny"
    assert plain.ip_filter is not None and plain.ip_filter.rule_type == "allow"
    assert plain.ip_filter_key == "security.ip.filter.list"
    assert (client.limits.max_per_ip, client.limits.max_connections) == (5, None)
    assert (plain.limits.max_connections, plain.limits.max_connections_per_listener) == (7, True)
    assert (client.idle_timeout, plain.idle_timeout) == (1.0, 600.0)
    assert client.privileged_principals == frozenset({"User:proxy", "User:CN=broker,OU=kafka"})
    assert (config.upstream.sasl_mechanism, config.upstream.username) == ("SCRAM-SHA-512", "proxy")


def test_the_controller_serves_scram_from_its_credentials_file(tmp_path: Path) -> None:
    props = controller_properties()
    props.update({"sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.scram.credentials.file": _credentials_file(tmp_path)})
    (listener,) = parse_controller_config(props).listeners
    assert listener.sasl_mechanisms == ("SCRAM-SHA-256",)
    assert "PLAIN" not in listener.sasl_servers  # PLAIN is not enabled, so its JAAS users are not read


def test_check_config_shows_security_settings_per_listener(tmp_path: Path) -> None:
    import json

    props = proxy_properties(9093, tmp_path)
    props.update(
        {
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "sasl.scram.credentials.file": _credentials_file(tmp_path),
            "listener.name.plain.security.ip.filter.rule.type": "allow",
            "listener.name.plain.security.ip.filter.list": "127.0.0.0/8,::1",
            "max.connections.per.ip.overrides": "127.0.0.1:50",
            "privileged.principals": "User:proxy",
        }
    )
    path = tmp_path / "proxy.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    effective = json.loads(result.stdout)
    client, plain = effective["listeners"]
    assert client["sasl.enabled.mechanisms"] == ["PLAIN", "SCRAM-SHA-512"]
    assert client["sasl.scram.credentials"] == {"file": props["sasl.scram.credentials.file"], "users": 1}
    assert client["security.ip.filter"] is None
    assert plain["security.ip.filter"]["rule_type"] == "allow"
    assert plain["security.ip.filter"]["list"] == ["127.0.0.0/8", "::1/128"]
    assert client["max.connections.per.ip.overrides"] == {"127.0.0.1": 50}
    assert client["max.connections"] is None
    assert client["privileged.principals"] == ["User:proxy"]
    assert effective["privileged.principals"] == ["User:proxy"]
    assert "alice-secret" not in result.stdout and "proxy-secret" not in result.stdout and "alice-scram" not in result.stdout


# -- TLS: SSL and SASL_SSL listeners, the proxy's TLS connection to the controller -----------------

_TLS_PASSWORD = "pki-secret"
_SSL_CLIENT = {"listener.security.protocol.map": "CLIENT:SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}


@pytest.fixture(scope="module")
def dev_pki(tmp_path_factory: pytest.TempPathFactory) -> "DevPki":
    from envelope_proxy.dev_pki import generate_dev_pki

    return generate_dev_pki(tmp_path_factory.mktemp("pki"), hosts=["localhost"], clients=["proxy"], password=_TLS_PASSWORD)


def _tls_props(pki: "DevPki", prefix: str = "") -> dict[str, str]:
    return {
        f"{prefix}ssl.keystore.location": str(pki.server_p12),
        f"{prefix}ssl.keystore.password": _TLS_PASSWORD,
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(pki.truststore_pem),
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param(
            _SSL_CLIENT,
            "Invalid value None for configuration ssl.keystore.location: "
            "a TLS server needs a keystore (ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain)",
            id="ssl-listener-without-keystore",
        ),
        pytest.param(
            {**_SSL_CLIENT, "listener.name.client.ssl.client.auth": "required"},
            "Invalid value None for configuration listener.name.client.ssl.keystore.location: a TLS server needs a keystore "
            "(listener.name.client.ssl.keystore.location, or listener.name.client.ssl.keystore.key with listener.name.client.ssl.keystore.certificate.chain)",
            id="ssl-listener-without-keystore-named-per-listener",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "listener.name.client.ssl.client.auth": "want"},
            "Invalid value 'want' for configuration listener.name.client.ssl.client.auth: "
            "unknown client authentication mode; expected none, requested or required",
            id="bad-client-auth",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "ssl.enabled.protocols": "TLSv1.2,TLSv1.1"},
            "Invalid value 'TLSv1.2,TLSv1.1' for configuration ssl.enabled.protocols: TLSv1.1 is insecure and unsupported; use TLSv1.2 and/or TLSv1.3",
            id="tls-1.1",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "ssl.cipher.suites": "TLS_RSA_WITH_RC4_128_SHA"},
            "Invalid value 'TLS_RSA_WITH_RC4_128_SHA' for configuration ssl.cipher.suites: "
            "unknown or unsupported cipher suite 'TLS_RSA_WITH_RC4_128_SHA'; use IANA names such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            id="unknown-cipher-suite",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "ssl.keystore.type": "JKS"},
            "Invalid value 'JKS' for configuration ssl.keystore.type: "
            "JKS stores are not supported; convert with `keytool -importkeystore -deststoretype PKCS12` or use PEM",
            id="jks-keystore",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "listener.name.client.ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/,NOPE"},
            "Invalid value 'RULE:^CN=(.*)$/$1/,NOPE' for configuration listener.name.client.ssl.principal.mapping.rules: "
            "Invalid rule: `NOPE`, unmatched substring: `NOPE`",
            id="malformed-mapping-rule",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "ssl.keystore.password": "wrong"},
            "Invalid value '[hidden]' for configuration ssl.keystore.password: cannot open PKCS12 store {server.p12}: wrong password",
            id="wrong-keystore-password",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "listener.name.client.ssl.keystore.location": "{server.p12}", "ssl.keystore.password": "wrong"},
            "Invalid value '[hidden]' for configuration ssl.keystore.password: cannot open PKCS12 store {server.p12}: wrong password",
            id="wrong-global-password-for-a-per-listener-keystore",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "ssl.truststore.location": "/nonexistent/ca.pem"},
            "Invalid value '/nonexistent/ca.pem' for configuration ssl.truststore.location: cannot read the file: No such file or directory",
            id="missing-truststore",
        ),
        pytest.param(
            {**_SSL_CLIENT, "{tls}": "", "listener.name.client.ssl.handshake.timeout.ms": "0"},
            "Invalid value '0' for configuration listener.name.client.ssl.handshake.timeout.ms: must be at least 1",
            id="handshake-timeout",
        ),
        pytest.param(
            {"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SSL", "listener.name.controller.ssl.keystore.location": "{server.p12}"},
            "Invalid value None for configuration listener.name.controller.ssl.keystore.password: a PKCS12 keystore ({server.p12}) needs its password",
            id="controller-client-keystore-without-password",
        ),
        pytest.param(
            {
                "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SASL_SSL",
                "listener.name.controller.ssl.truststore.location": "/nonexistent/truststore.p12",
            },
            "Invalid value '/nonexistent/truststore.p12' for configuration listener.name.controller.ssl.truststore.location: "
            "cannot read the file: No such file or directory",
            id="controller-client-missing-truststore",
        ),
        pytest.param(
            {
                "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SSL",
                "listener.name.controller.ssl.endpoint.identification.algorithm": "dns",
            },
            "Invalid value 'dns' for configuration listener.name.controller.ssl.endpoint.identification.algorithm: "
            "unsupported algorithm; use https, or an empty value to turn host name verification off",
            id="controller-endpoint-identification",
        ),
    ],
)
def test_tls_config_rejections(dev_pki: "DevPki", changes: dict[str, str], message: str) -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    for key, value in changes.items():
        if key == "{tls}":
            props.update(_tls_props(dev_pki))
        else:
            props[key] = value.replace("{server.p12}", str(dev_pki.server_p12))
    with pytest.raises(ConfigError) as error:
        parse_proxy_config(props)
    assert str(error.value) == message.replace("{server.p12}", str(dev_pki.server_p12))


def test_the_embedded_controller_rejects_an_ssl_listener_without_a_keystore() -> None:
    props = {**controller_properties(), "listener.security.protocol.map": "CONTROLLER:SSL"}
    with pytest.raises(ConfigError) as error:
        parse_controller_config(props)
    assert str(error.value).startswith("Invalid value None for configuration ssl.keystore.location: a TLS server needs a keystore")


def test_tls_keys_fall_back_per_key_and_kip_684_ignores_the_global_client_auth_on_sasl_ssl(dev_pki: "DevPki") -> None:
    props = proxy_properties(9093, Path("/tmp/audit"))
    props.update(
        {
            "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0,MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "CLIENT:SASL_SSL,PLAIN:PLAINTEXT,MTLS:SSL,CONTROLLER:SASL_PLAINTEXT",
            **_tls_props(dev_pki),
            "ssl.client.auth": "required",
            "listener.name.mtls.ssl.enabled.protocols": "TLSv1.3",
            "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=clients.*$/$1/L,DEFAULT",
        }
    )
    client, plain, mtls = parse_proxy_config(props).listeners
    assert plain.tls is None
    assert client.tls is not None and mtls.tls is not None
    assert (client.tls.settings.client_auth, mtls.tls.settings.client_auth) == ("none", "required")
    assert (client.tls.settings.enabled_protocols, mtls.tls.settings.enabled_protocols) == (("TLSv1.2", "TLSv1.3"), ("TLSv1.3",))
    assert mtls.tls.settings.keystore_location == str(dev_pki.server_p12)  # from the global key
    assert mtls.tls.mapper.map("CN=Alice,OU=clients,O=x") == "alice"
    assert client.tls.mapper.map("CN=Alice,OU=clients,O=x") == "CN=Alice,OU=clients,O=x"  # DEFAULT


def test_the_proxy_connects_to_the_controller_with_the_controller_listeners_tls_keys(dev_pki: "DevPki") -> None:
    proxy_cert = dev_pki.clients[0]
    props = proxy_properties(9093, Path("/tmp/audit"))
    props.update(
        {
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(dev_pki.truststore_pem),
            "listener.name.controller.ssl.keystore.location": str(proxy_cert.p12),
            "listener.name.controller.ssl.keystore.password": _TLS_PASSWORD,
        }
    )
    config = parse_proxy_config(props)
    upstream = config.upstream
    assert upstream.security_protocol == "SSL" and upstream.tls is not None and upstream.tls_context is not None
    assert upstream.tls.truststore_location == str(dev_pki.truststore_pem)  # global fallback
    assert upstream.tls.endpoint_identification is True  # Kafka's default https
    assert upstream.certificate_dn == proxy_cert.dn
    assert config.forwarding_principal == f"User:{proxy_cert.dn}"


def test_check_config_shows_tls_settings_per_listener_with_passwords_hidden(tmp_path: Path, dev_pki: "DevPki") -> None:
    import json

    props = proxy_properties(9093, tmp_path)
    props.update(
        {
            "listeners": "CLIENT://127.0.0.1:0,PLAIN://127.0.0.1:0",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:SSL,CONTROLLER:SASL_SSL",
            **_tls_props(dev_pki, "listener.name.plain."),
            "listener.name.plain.ssl.client.auth": "requested",
            "listener.name.plain.ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=clients.*$/$1/,DEFAULT",
            "listener.name.controller.ssl.truststore.type": "PEM",
            "listener.name.controller.ssl.truststore.location": str(dev_pki.truststore_pem),
        }
    )
    path = tmp_path / "proxy.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    result = subprocess.run(
        [sys.executable, "-m", "envelope_proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    effective = json.loads(result.stdout)
    client, plain = effective["listeners"]
    assert client["ssl"] is None
    assert plain["security.protocol"] == "SSL"
    ssl_shown = plain["ssl"]
    assert ssl_shown["ssl.keystore.location"] == str(dev_pki.server_p12)
    assert ssl_shown["ssl.keystore.password"] == "[hidden]"
    assert ssl_shown["ssl.client.auth"] == "requested"
    assert ssl_shown["ssl.enabled.protocols"] == "TLSv1.2,TLSv1.3"
    assert ssl_shown["ssl.principal.mapping.rules"] == ["RULE:^CN=(.*?),OU=clients.*$/$1", "DEFAULT"]  # Kafka's Rule.toString()
    assert ssl_shown["ssl.handshake.timeout.ms"] == 10000
    controller_ssl = effective["controller"]["ssl"]
    assert controller_ssl["ssl.truststore.location"] == str(dev_pki.truststore_pem)
    assert controller_ssl["ssl.endpoint.identification.algorithm"] == "https"
    assert _TLS_PASSWORD not in result.stdout
