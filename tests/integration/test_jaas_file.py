"""A broker-style JAAS file configures the proxy's listeners and its own login to the controller, looked up as Kafka
looks it up: the property `listener.name.<l>.<mech>.sasl.jaas.config`, then `<l>.KafkaServer`, then `KafkaServer`. The
file is named by `jaas.config.file` (which wins) or by -Djava.security.auth.login.config in KAFKA_OPTS."""

from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope_proxy.embedded import EmbeddedStack, proxy_properties, start_stack
from proxy.config import parse_proxy_config
from proxy.net.sasl.jaas_model import JaasError

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"

BROKER_JAAS = f"""
// The client listener's own users: KafkaServer is not merged in.
client.KafkaServer {{
    {PLAIN_MODULE} required
        user_admin="admin-secret"
        user_alice="alice-secret";
}};

/* Every other listener, and the login to the controller listener (no controller.KafkaServer entry). */
KafkaServer {{
    {PLAIN_MODULE} required
        username="proxy"
        password="proxy-secret"
        user_bob="bob-secret";
}};
"""

_DROPPED = ("listener.name.client.plain.sasl.jaas.config", "listener.name.controller.plain.sasl.jaas.config")


def _without_jaas_properties(props: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in props.items() if key not in _DROPPED}


async def _stack(nursery: Any, tmp_path: Path, overrides: dict[str, str]) -> EmbeddedStack:
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=overrides)
    return stack


def _plain_login(address: str, user: str, password: str) -> int:
    with wire.connect(address) as sock:
        return wire.sasl_plain_login(sock, user, password)


def _jaas_file(tmp_path: Path, text: str = BROKER_JAAS) -> Path:
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(text)
    return path


@pytest.mark.parametrize("named_by", ["jaas.config.file", "KAFKA_OPTS"])
async def test_a_broker_jaas_file_configures_listeners_and_the_proxys_login(
    nursery: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named_by: str
) -> None:
    path = _jaas_file(tmp_path)
    overrides: dict[str, str] = {}
    if named_by == "jaas.config.file":
        overrides["jaas.config.file"] = str(path)
        monkeypatch.setenv("KAFKA_OPTS", "-Djava.security.auth.login.config=/nonexistent/ignored.conf")  # the key wins
    else:
        monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={path}")
    base = _without_jaas_properties(proxy_properties(0, tmp_path / "audit"))
    # start_stack merges the overrides over its properties: drop the JAAS properties by overriding with the file alone.
    import envelope_proxy.embedded as embedded

    monkeypatch.setattr(embedded, "proxy_properties", lambda *args, **kwargs: _without_jaas_properties(proxy_properties(*args, **kwargs)))
    assert "listener.name.client.plain.sasl.jaas.config" not in base
    stack = await _stack(nursery, tmp_path, overrides)

    (client,) = [listener for listener in stack.proxy_config.listeners if listener.name == "CLIENT"]
    assert client.effective()["plain.jaas.login"] == f"{path}: entry client.KafkaServer"
    with trio.fail_after(10):
        while not stack.proxy.service.upstream.connected:  # the proxy logged in as "proxy", from KafkaServer
            await trio.sleep(0.02)
    assert stack.proxy_config.forwarding_principal == "User:proxy"

    results = await trio.to_thread.run_sync(
        lambda: {
            "alice": _plain_login(stack.sasl_address, "alice", "alice-secret"),
            "alice, wrong password": _plain_login(stack.sasl_address, "alice", "nope"),
            "bob, only in KafkaServer": _plain_login(stack.sasl_address, "bob", "bob-secret"),
        }
    )
    assert results == {"alice": 0, "alice, wrong password": ErrorCode.sasl_authentication_failed, "bob, only in KafkaServer": ErrorCode.sasl_authentication_failed}


def test_the_property_wins_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    props = {**proxy_properties(9093, tmp_path), "jaas.config.file": str(_jaas_file(tmp_path))}
    config = parse_proxy_config(props)
    (client,) = [listener for listener in config.listeners if listener.name == "CLIENT"]
    assert client.effective()["plain.jaas.login"] == "listener.name.client.plain.sasl.jaas.config"


def test_a_listener_without_its_own_entry_reads_kafkaserver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    props = {
        **_without_jaas_properties(proxy_properties(9093, tmp_path)),
        "jaas.config.file": str(_jaas_file(tmp_path)),
        "listeners": "CLIENT://127.0.0.1:0,OTHER://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    }
    config = parse_proxy_config(props)
    logins = {listener.name: listener.effective()["plain.jaas.login"] for listener in config.listeners}
    assert logins == {"CLIENT": f"{tmp_path}/kafka_server_jaas.conf: entry client.KafkaServer", "OTHER": f"{tmp_path}/kafka_server_jaas.conf: entry KafkaServer"}
    assert config.upstream.username == "proxy"


def test_a_bad_file_names_file_line_entry_and_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    broken = BROKER_JAAS.replace('user_alice="alice-secret";', 'user_alice="alice-secret"')  # the module's ';' is missing
    path = _jaas_file(tmp_path, broken)
    props = {**_without_jaas_properties(proxy_properties(9093, tmp_path)), "jaas.config.file": str(path)}
    with pytest.raises(JaasError) as caught:
        parse_proxy_config(props)
    message = str(caught.value)
    assert str(path) in message and "line 7" in message and "entry client.KafkaServer" in message, message
    assert caught.value.file == str(path) and caught.value.entry == "client.KafkaServer"


def test_a_missing_file_and_a_file_without_the_entries_are_configuration_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={tmp_path}/absent.conf")
    props = _without_jaas_properties(proxy_properties(9093, tmp_path))
    with pytest.raises(JaasError, match=r"absent\.conf: cannot read the JAAS file"):
        parse_proxy_config(props)
    other = _jaas_file(tmp_path, f"KafkaClient {{ {PLAIN_MODULE} required username=x password=y; }};")
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={other}")
    with pytest.raises(JaasError, match=r"the JAAS file has neither an entry controller\.KafkaServer nor KafkaServer"):
        parse_proxy_config(props)
