"""`envelope-proxy certs --protocol`: the printed snippet fits the listener it is printed for (issue 50).

An SSL listener gets client certificates (`ssl.client.auth=required`, mapping rules); a SASL_SSL listener,
such as the sidecar's CLIENT listener (docs/deploy.md), gets the server's keystore only: its principal is
the SASL user, and a snippet that required client certificates there would lock out every SCRAM client.
"""

from pathlib import Path

import javaproperties
import pytest

from envelope_proxy.cli import main
from envelope_proxy.embedded import proxy_properties
from proxy.config import parse_proxy_config
from proxy.net.sasl.credentials import add_user


def _snippet(stdout: str) -> dict[str, str]:
    return dict(javaproperties.loads(stdout.split("\n\n", 1)[1]))


def _certs(tmp_path: Path, *extra: str) -> None:
    assert main(["certs", "--out", str(tmp_path / "pki"), "--host", "localhost", "--password", "dev-secret", *extra]) == 0


def test_a_sasl_ssl_listener_gets_a_keystore_and_no_client_certificates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _certs(tmp_path, "--client", "alice", "--listener", "CLIENT", "--protocol", "SASL_SSL")
    stdout = capsys.readouterr().out
    snippet = _snippet(stdout)
    assert set(snippet) == {
        f"listener.name.client.ssl.{key}" for key in ("keystore.type", "keystore.location", "keystore.password", "key.password")
    }
    assert "CLIENT:SASL_SSL" in stdout and "ssl.client.auth" not in snippet and "# security.protocol=SASL_SSL" in stdout
    assert "a SASL_SSL listener does not ask for them" in stdout

    # What the sidecar's proxy.properties has for CLIENT, with the snippet pasted in: the proxy accepts it.
    scram = tmp_path / "scram.json"
    add_user(scram, "alice", "alice-secret", ["SCRAM-SHA-512"], iterations=4096)
    props = {**proxy_properties(9093, tmp_path / "audit"), **snippet}
    props.update(
        {
            "listeners": "CLIENT://127.0.0.1:0",
            "listener.security.protocol.map": "CLIENT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.scram.credentials.file": str(scram),
        }
    )
    del props["listener.name.client.plain.sasl.jaas.config"]
    (client,) = parse_proxy_config(props).listeners
    assert client.security_protocol == "SASL_SSL"
    assert client.tls is not None and client.tls.settings.client_auth == "none"


def test_a_listener_named_sasl_ssl_defaults_to_sasl_ssl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _certs(tmp_path, "--listener", "SASL_SSL")
    snippet = _snippet(capsys.readouterr().out)
    assert "listener.name.sasl_ssl.ssl.keystore.location" in snippet and "listener.name.sasl_ssl.ssl.client.auth" not in snippet


def test_ssl_stays_the_default_with_client_certificates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _certs(tmp_path, "--listener", "CLIENT")
    stdout = capsys.readouterr().out
    assert _snippet(stdout)["listener.name.client.ssl.client.auth"] == "required"
    assert "CLIENT:SSL" in stdout


def test_an_unknown_protocol_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["certs", "--out", str(tmp_path / "pki"), "--host", "localhost", "--protocol", "PLAINTEXT"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'PLAINTEXT'" in capsys.readouterr().err
