"""`envelope-proxy scram add-user / remove-user` as a real process."""

import subprocess
import sys
from pathlib import Path

import pytest

from proxy.net.sasl.credentials import load_credentials
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.sasl.scram_server import ScramServer


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envelope_proxy.cli", "scram", *args], input=stdin, capture_output=True, text=True, timeout=60)


def can_login(path: Path, mechanism: str, user: str, password: str) -> bool:
    server = ScramServer(mechanism, load_credentials(path).lookup(mechanism))
    client = ScramClient(mechanism, user, password)
    try:
        client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    except Exception:
        return False
    return server.username == user


def test_add_user_reads_the_password_from_stdin_and_stores_no_password(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    result = cli("add-user", "--file", str(path), "--user", "alice", stdin="alice-secret\n")
    assert result.returncode == 0, result.stderr
    assert "alice" in result.stdout and "alice-secret" not in result.stdout
    assert can_login(path, "SCRAM-SHA-256", "alice", "alice-secret")
    assert can_login(path, "SCRAM-SHA-512", "alice", "alice-secret")
    assert "alice-secret" not in path.read_text()


def test_add_user_with_a_password_file_one_mechanism_and_iterations(tmp_path: Path) -> None:
    path, secret = tmp_path / "scram.json", tmp_path / "password"
    secret.write_text("bob-secret\nignored second line\n")
    result = cli("add-user", "--file", str(path), "--user", "bob", "--password-file", str(secret), "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
    assert result.returncode == 0, result.stderr
    credential = load_credentials(path).get("bob", "SCRAM-SHA-512")
    assert credential is not None and credential.iterations == 8192
    assert load_credentials(path).get("bob", "SCRAM-SHA-256") is None
    assert can_login(path, "SCRAM-SHA-512", "bob", "bob-secret")


def test_remove_user(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    assert cli("add-user", "--file", str(path), "--user", "carol", stdin="pw\n").returncode == 0
    removed = cli("remove-user", "--file", str(path), "--user", "carol")
    assert removed.returncode == 0, removed.stderr
    assert load_credentials(path).users() == []
    again = cli("remove-user", "--file", str(path), "--user", "carol")
    assert again.returncode == 1
    assert f"{path}: no user carol" in again.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--mechanism", "SCRAM-SHA-1"], "pw\n", "argument --mechanism: invalid choice: 'SCRAM-SHA-1'"),
        (["--iterations", "100"], "pw\n", "error: --iterations 100 is outside 4096..16384"),
        (["--iterations", "many"], "pw\n", "argument --iterations: invalid int value: 'many'"),
        ([], "", "error: the password is empty"),
        (["--password-file", "/nonexistent/password"], "", "error: cannot read the password file /nonexistent/password: No such file or directory"),
        (["--password", "on-the-command-line"], "", "error: --password is not accepted: other users can read the command line"),
        (["--passw", "on-the-command-line"], "", "unrecognized arguments: --passw on-the-command-line"),
    ],
)
def test_bad_input_exits_2_with_a_precise_message(tmp_path: Path, args: list[str], stdin: str, message: str) -> None:
    path = tmp_path / "scram.json"
    result = cli("add-user", "--file", str(path), "--user", "alice", *args, stdin=stdin)
    assert result.returncode == 2
    assert message in result.stderr
    assert not path.exists()


def test_a_broken_credentials_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    path.write_text("{")
    result = cli("add-user", "--file", str(path), "--user", "alice", stdin="pw\n")
    assert result.returncode == 2
    assert f"Invalid value '{path}' for configuration sasl.scram.credentials.file: not valid JSON" in result.stderr
    assert path.read_text() == "{"
