"""The how-to of docs/configuration.md, "From a broker's server.properties and JAAS file", holds: the example proxy
configuration in docs/examples/broker-to-proxy takes the broker's JAAS file through KAFKA_OPTS as the broker does,
and every client-facing setting it copies from the broker's server.properties is the broker's own."""

from pathlib import Path

import pytest

from proxy.config import parse_proxy_config
from proxy.net.sasl.mechanisms import UsernamePasswordLogin
from proxy.net.sasl.plain import verify_plain
from proxy.properties import load_properties

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "broker-to-proxy"
# The keys a proxy cannot copy: its own ports and address, and the broker-to-broker ones it has no use for.
CHANGED = {"listeners", "advertised.listeners", "listener.security.protocol.map"}


def _kafka_opts(server: Path) -> str:
    """The KAFKA_OPTS line the example's server.properties documents, with the JAAS file where it is here."""
    line = next(line for line in server.read_text().splitlines() if line.startswith("# KAFKA_OPTS="))
    return line.removeprefix("# KAFKA_OPTS=").replace("/etc/kafka/kafka_server_jaas.conf", str(EXAMPLE / "kafka_server_jaas.conf"))


def test_the_proxy_copies_the_brokers_client_facing_settings_unchanged() -> None:
    broker = load_properties(EXAMPLE / "server.properties")
    proxy = load_properties(EXAMPLE / "proxy.properties")
    shared = set(proxy) & set(broker)
    assert {key for key in shared if proxy[key] != broker[key]} <= CHANGED
    assert "listener.name.external.oauthbearer.sasl.oauthbearer.jwks.endpoint.url" in shared


def test_the_example_runs_on_the_brokers_jaas_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_OPTS", _kafka_opts(EXAMPLE / "server.properties"))
    config = parse_proxy_config(load_properties(EXAMPLE / "proxy.properties"))
    (external,) = config.listeners
    assert external.sasl_mechanisms == ("PLAIN", "OAUTHBEARER")
    assert external.max_reauth_ms == {"PLAIN": 86400000, "OAUTHBEARER": 3600000}
    plain = external.sasl_servers["PLAIN"]
    users = plain.users
    # The listener's own entry (external.KafkaServer) whole: alice, never KafkaServer's broker.
    assert verify_plain(b"\x00alice\x00alice-secret", users) == "alice"
    assert "broker" not in users
    login = config.upstream.login
    assert isinstance(login, UsernamePasswordLogin) and (login.username, login.password) == ("proxy", "proxy-secret")
    assert config.forwarding_principal == "User:proxy"


@pytest.mark.parametrize("mechanism", ["plain", "scram-sha-256"])
def test_a_brokers_custom_callback_handler_is_refused_not_ignored(mechanism: str, tmp_path: Path) -> None:
    from proxy.net.sasl.credentials import add_user
    from proxy.properties import ConfigError

    credentials = tmp_path / "scram.json"
    add_user(credentials, "carol", "carol-secret", mechanisms=["SCRAM-SHA-256"])
    props = load_properties(EXAMPLE / "proxy.properties")
    props.update({
        "listener.name.external.sasl.enabled.mechanisms": mechanism.upper(),
        "jaas.config.file": str(EXAMPLE / "kafka_server_jaas.conf"),
        "sasl.scram.credentials.file": str(credentials),
        f"listener.name.external.{mechanism}.sasl.server.callback.handler.class": "com.example.LdapCallbackHandler",
    })  # fmt: skip
    with pytest.raises(ConfigError, match=f"listener.name.external.{mechanism}.sasl.server.callback.handler.class.*cannot run a Java callback handler"):
        parse_proxy_config(props)
