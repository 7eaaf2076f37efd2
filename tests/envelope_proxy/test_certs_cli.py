"""`envelope-proxy certs`: files, the printed snippet (which a proxy accepts), and exit 2 on bad input."""

import io
from pathlib import Path

import javaproperties
import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from envelope_proxy.cli import main
from envelope_proxy.embedded import proxy_properties
from proxy.config import parse_proxy_config


def _snippet(stdout: str) -> dict[str, str]:
    return dict(javaproperties.loads(stdout.split("\n\n", 1)[1]))


def test_certs_writes_the_pki_and_prints_a_snippet_a_proxy_accepts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pki"
    args = ["certs", "--out", str(out), "--host", "localhost", "--host", "127.0.0.1", "--client", "alice", "--client", "admin"]
    assert main([*args, "--password", "dev-secret", "--days", "30", "--listener", "client"]) == 0
    stdout = capsys.readouterr().out
    for name in ("ca.pem", "server.p12", "truststore.pem", "truststore.p12", "client-alice.pem", "client-alice.key", "client-admin.p12"):
        assert f"{out / name}  " in stdout
    assert "CN=alice,OU=clients,O=kafka-envelope-proxy-dev" in stdout
    snippet = _snippet(stdout)
    assert snippet["listener.name.client.ssl.keystore.password"] == "dev-secret"
    assert snippet["listener.name.client.ssl.client.auth"] == "required"
    props = {**proxy_properties(9093, tmp_path / "audit"), **snippet}
    props["listener.security.protocol.map"] = "CLIENT:SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    client = parse_proxy_config(props).listeners[0]
    assert client.tls is not None and client.tls.settings.client_auth == "required"
    assert client.tls.mapper.map("CN=alice,OU=clients,O=kafka-envelope-proxy-dev") == "alice"


def test_certs_without_a_password_uses_a_random_one_and_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "--out", str(tmp_path), "--host", "localhost"]) == 0
    password = _snippet(capsys.readouterr().out)["listener.name.ssl.ssl.keystore.password"]
    assert len(password) >= 20
    pkcs12.load_pkcs12((tmp_path / "server.p12").read_bytes(), password.encode())


def test_certs_reads_the_password_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pw").write_text("from-file\nignored\n")
    assert main(["certs", "--out", str(tmp_path / "pki"), "--host", "localhost", "--password-file", str(tmp_path / "pw")]) == 0
    pkcs12.load_pkcs12((tmp_path / "pki" / "server.p12").read_bytes(), b"from-file")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--host", "localhost", "--days", "0"], "error: --days 0 must be at least 1"),
        (["--host", "bad host"], "error: --host 'bad host' is neither an IP address nor a DNS name"),
        (["--host", ""], "error: --host '' is neither an IP address nor a DNS name"),
        (
            ["--host", "localhost", "--client", "al ice"],
            "error: client name 'al ice' must be letters, digits, '.', '_' or '-' (it becomes a file name and a CN)",
        ),
        (["--host", "localhost", "--client", "alice", "--client", "alice"], "error: client names must be unique"),
        (["--host", "localhost", "--password", ""], "error: --password must not be empty"),
        (["--host", "localhost", "--password-file", "/nonexistent/pw"], "error: cannot read the password file /nonexistent/pw: No such file or directory"),
        (["--host", "localhost", "--listener", "a/b"], "error: --listener 'a/b' is not a listener name (letters, digits, '_', '-', '.')"),
    ],
)
def test_certs_bad_input_exits_2_with_a_precise_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["certs", "--out", str(tmp_path / "pki"), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message
    assert captured.out == ""


def test_certs_with_half_a_ca_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ca.pem").write_text("")
    assert main(["certs", "--out", str(tmp_path), "--host", "localhost"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path} has only one of ca.pem and ca.key; remove it or pass reuse_ca=False"


@pytest.mark.parametrize(
    "extra",
    [
        ["--host", "localhost", "--password", "a", "--password-file", "f"],  # mutually exclusive
        ["--client", "alice"],  # --host is required
    ],
)
def test_certs_usage_errors_exit_2(tmp_path: Path, extra: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["certs", "--out", str(tmp_path), *extra])
    assert exit_.value.code == 2


def test_certs_from_a_non_terminal_stdin_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("should-not-be-used\n"))
    assert main(["certs", "--out", str(tmp_path), "--host", "127.0.0.1"]) == 0
    assert "should-not-be-used" not in capsys.readouterr().out
