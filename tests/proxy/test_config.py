"""Configuration errors name the key, the value and the reason."""

import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import parse_controller_config
from proxy.config import parse_proxy_config
from proxy.config_errors import ConfigError
from proxy.embedded import controller_properties, proxy_properties
from proxy.jaas import parse_jaas


def test_the_embedded_defaults_parse() -> None:
    config = parse_proxy_config(proxy_properties(9093, Path("/tmp/audit")))
    assert [item.name for item in config.listeners] == ["CLIENT", "PLAIN"]
    assert config.listeners[0].plain_users["alice"] == "alice-secret"
    assert config.upstream.username == "proxy"
    assert config.forwarding_principal == "User:proxy"


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
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms", "GSSAPI is not supported"),
        ({"node.id": "abc"}, "node.id", "expected an integer"),
        ({"node.id": None}, "node.id", "is required"),
        ({"request.timeout.ms": "0"}, "request.timeout.ms", "at least 1"),
        ({"sasl.mechanism.controller.protocol": None}, "sasl.mechanism.controller.protocol", "only PLAIN"),
        (
            {"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,PLAIN:PLAINTEXT,CONTROLLER:BOGUS"},
            "listener.security.protocol.map",
            "unknown security protocol",
        ),
        ({"controller.quorum.bootstrap.servers": "nohost"}, "controller.quorum.bootstrap.servers", "expected host:port"),
        (
            {"security.inter.broker.protocol": "PLAINTEXT", "inter.broker.listener.name": "CLIENT"},
            "inter.broker.listener.name",
            "only one of",
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
        [sys.executable, "-m", "proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "Invalid value 'CLIENT://127.0.0.1:1,CLIENT://127.0.0.1:2' for configuration listeners" in result.stderr


def test_check_config_prints_effective_settings_with_secrets_masked(tmp_path: Path) -> None:
    path = tmp_path / "proxy.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in proxy_properties(9093, tmp_path).items()))
    result = subprocess.run(
        [sys.executable, "-m", "proxy.cli", "check-config", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert '"alice": "[hidden]"' in result.stdout
    assert "alice-secret" not in result.stdout and "proxy-secret" not in result.stdout
