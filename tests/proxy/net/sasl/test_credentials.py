"""The SCRAM credential file: round trips, atomic 0600 writes, and precise errors."""

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from proxy.net.sasl.credentials import add_user, load_credentials, remove_user
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.sasl.scram_server import ScramServer
from proxy.properties import ConfigError

SHA256 = "SCRAM-SHA-256"
SHA512 = "SCRAM-SHA-512"
KEY = "sasl.scram.credentials.file"


def login(path: Path, mechanism: str, user: str, password: str) -> bool:
    server = ScramServer(mechanism, load_credentials(path).lookup(mechanism))
    client = ScramClient(mechanism, user, password)
    try:
        client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    except Exception:
        return False
    return server.complete and client.complete and server.username == user


def test_add_reload_remove_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "alice-secret", [SHA256, SHA512])
    add_user(path, "bob", "bob-secret", [SHA512], iterations=8192)
    store = load_credentials(path)
    assert store.users() == ["alice", "bob"]
    assert login(path, SHA256, "alice", "alice-secret")
    assert login(path, SHA512, "alice", "alice-secret")
    assert login(path, SHA512, "bob", "bob-secret")
    assert not login(path, SHA256, "bob", "bob-secret")  # bob has no SHA-256 credential
    assert not login(path, SHA256, "alice", "wrong")
    bob = store.get("bob", SHA512)
    assert bob is not None and bob.iterations == 8192

    assert remove_user(path, "alice") is True
    assert remove_user(path, "alice") is False
    assert load_credentials(path).users() == ["bob"]
    assert not login(path, SHA256, "alice", "alice-secret")
    assert login(path, SHA512, "bob", "bob-secret")


def test_add_user_replaces_only_the_named_mechanisms(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "old", [SHA256, SHA512])
    before = load_credentials(path).get("alice", SHA512)
    add_user(path, "alice", "new", [SHA256])
    store = load_credentials(path)
    assert store.get("alice", SHA512) == before
    assert login(path, SHA256, "alice", "new")
    assert not login(path, SHA256, "alice", "old")
    assert login(path, SHA512, "alice", "old")


def test_the_file_holds_no_password_and_the_documented_format(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "Sup3r-Secret-Passw0rd", [SHA256, SHA512])
    raw = path.read_bytes()
    assert b"Sup3r-Secret-Passw0rd" not in raw
    assert base64.b64encode(b"Sup3r-Secret-Passw0rd") not in raw
    document = json.loads(raw)
    assert document["version"] == 1
    assert set(document["users"]) == {"alice"}
    assert set(document["users"]["alice"]) == {SHA256, SHA512}
    entry = document["users"]["alice"][SHA256]
    assert set(entry) == {"salt", "stored_key", "server_key", "iterations"}
    assert entry["iterations"] == 4096
    assert len(base64.b64decode(entry["stored_key"])) == 32
    assert len(base64.b64decode(document["users"]["alice"][SHA512]["server_key"])) == 64


def test_file_mode_is_0600_and_no_temp_files_remain(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "pw", [SHA256])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    add_user(path, "bob", "pw", [SHA256])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    remove_user(path, "bob")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scram.json"]


def test_write_replaces_the_file_rather_than_rewriting_it(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "pw", [SHA256])
    inode = path.stat().st_ino
    add_user(path, "bob", "pw", [SHA256])
    assert path.stat().st_ino != inode


def test_remove_user_on_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    assert remove_user(path, "alice") is False
    assert not path.exists()


def test_a_broken_file_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        add_user(path, "alice", "pw", [SHA256])
    with pytest.raises(ConfigError, match="not valid JSON"):
        remove_user(path, "alice")
    assert path.read_text() == "{not json"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mechanisms": ["SCRAM-SHA-1"]}, "'SCRAM-SHA-1'"),
        ({"mechanisms": [SHA256, "PLAIN"]}, "'PLAIN'"),
        ({"mechanisms": []}, "at least one"),
        ({"mechanisms": SHA256}, "not the string 'SCRAM-SHA-256'"),
        ({"iterations": 4095}, "4095"),
        ({"iterations": 16385}, "16385"),
        ({"iterations": True}, "True"),
        ({"user": ""}, "user name ''"),
    ],
)
def test_add_user_validates_its_arguments(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    path = tmp_path / "scram.json"
    arguments: dict[str, object] = {"user": "alice", "password": "pw", "mechanisms": [SHA256], "iterations": 4096}
    arguments.update(kwargs)
    with pytest.raises(ValueError) as info:
        add_user(path, **arguments)  # type: ignore[arg-type]
    assert message in str(info.value)
    assert not isinstance(info.value, ConfigError)
    assert not path.exists()


def test_lookup_rejects_an_unknown_mechanism(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "pw", [SHA256])
    store = load_credentials(path)
    assert store.lookup(SHA256)("alice") is not None
    assert store.lookup(SHA256)("nobody") is None
    assert store.lookup(SHA512)("alice") is None
    with pytest.raises(ValueError, match="SCRAM-SHA-1"):
        store.lookup("SCRAM-SHA-1")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(ConfigError) as info:
        load_credentials(path, key="listener.name.client.scram.file")
    assert info.value.key == "listener.name.client.scram.file"
    assert info.value.value == str(path)
    assert info.value.reason == "the file does not exist"


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_credentials(tmp_path)  # a directory
    assert info.value.key == KEY
    assert info.value.reason.startswith("the file cannot be read")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    path.write_bytes(b'{"version": 1, "users": {"\xff": {}}}')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_credentials(path)


def good_entry() -> dict[str, object]:
    return {
        "salt": base64.b64encode(b"salt").decode(),
        "stored_key": base64.b64encode(b"k" * 32).decode(),
        "server_key": base64.b64encode(b"s" * 32).decode(),
        "iterations": 4096,
    }


def with_entry(**changes: object) -> dict[str, object]:
    entry = good_entry()
    for name, value in changes.items():
        if value is None:
            del entry[name]
        else:
            entry[name] = value
    return {"version": 1, "users": {"alice": {SHA256: entry}}}


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "the top level must be a JSON object, not an array"),
        ({"users": {}}, "the field 'version' is missing"),
        ({"version": 2, "users": {}}, "unsupported version 2 (expected 1)"),
        ({"version": "1", "users": {}}, "unsupported version '1' (expected 1)"),
        ({"version": True, "users": {}}, "unsupported version True (expected 1)"),
        ({"version": 1}, "the field 'users' is missing"),
        ({"version": 1, "users": []}, "'users' must be an object, not an array"),
        ({"version": 1, "users": {}, "extra": 1}, "unexpected top-level field 'extra'"),
        ({"version": 1, "users": {"": {}}}, "a user name is empty"),
        ({"version": 1, "users": {"alice": "pw"}}, "user 'alice': expected an object of mechanisms, not a string"),
        ({"version": 1, "users": {"alice": {}}}, "user 'alice': has no SCRAM credentials"),
        (
            {"version": 1, "users": {"alice": {"SCRAM-SHA-1": {}}}},
            "user 'alice': unknown mechanism 'SCRAM-SHA-1' (supported: SCRAM-SHA-256, SCRAM-SHA-512)",
        ),
        ({"version": 1, "users": {"alice": {SHA256: 4096}}}, "user 'alice', SCRAM-SHA-256: expected an object, not int"),
        (with_entry(password="pw"), "user 'alice', SCRAM-SHA-256: unexpected field 'password' (the file holds salted keys only)"),
        (with_entry(salt=None), "user 'alice', SCRAM-SHA-256: the field 'salt' is missing"),
        (with_entry(server_key=None), "user 'alice', SCRAM-SHA-256: the field 'server_key' is missing"),
        (with_entry(salt="not base64!"), "user 'alice', SCRAM-SHA-256: 'salt' is not valid base64"),
        (with_entry(salt=""), "user 'alice', SCRAM-SHA-256: 'salt' is empty"),
        (with_entry(salt=12), "user 'alice', SCRAM-SHA-256: 'salt' must be a base64 string, not int"),
        (with_entry(stored_key="é"), "user 'alice', SCRAM-SHA-256: 'stored_key' is not valid base64"),
        (with_entry(stored_key=base64.b64encode(b"k" * 64).decode()), "user 'alice', SCRAM-SHA-256: 'stored_key' is 64 bytes, expected 32"),
        (with_entry(server_key=base64.b64encode(b"k").decode()), "user 'alice', SCRAM-SHA-256: 'server_key' is 1 bytes, expected 32"),
        (with_entry(iterations="4096"), "user 'alice', SCRAM-SHA-256: 'iterations' must be an integer, not a string"),
        (with_entry(iterations=4096.0), "user 'alice', SCRAM-SHA-256: 'iterations' must be an integer, not float"),
        (with_entry(iterations=False), "user 'alice', SCRAM-SHA-256: 'iterations' must be an integer, not a boolean"),
        (with_entry(iterations=4095), "user 'alice', SCRAM-SHA-256: 'iterations' 4095 is outside 4096..16384"),
        (with_entry(iterations=16385), "user 'alice', SCRAM-SHA-256: 'iterations' 16385 is outside 4096..16384"),
    ],
)
def test_malformed_file_errors_name_the_problem(tmp_path: Path, document: object, reason: str) -> None:
    path = tmp_path / "scram.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError) as info:
        load_credentials(path)
    assert info.value.key == KEY
    assert info.value.value == str(path)
    assert info.value.reason == reason
    assert KEY in str(info.value)


def test_invalid_json_names_the_position(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    path.write_text('{"version": 1,\n "users": {,}}')
    with pytest.raises(ConfigError) as info:
        load_credentials(path)
    assert info.value.reason.startswith("not valid JSON: ")
    assert "line 2 column" in info.value.reason


def test_duplicate_user_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    entry = json.dumps({SHA256: good_entry()})
    path.write_text(f'{{"version": 1, "users": {{"alice": {entry}, "alice": {entry}}}}}')
    with pytest.raises(ConfigError) as info:
        load_credentials(path)
    assert info.value.reason == "the name 'alice' appears twice in one object"


def test_a_hand_written_valid_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    path.write_text(json.dumps(with_entry()))
    os.chmod(path, 0o600)
    credential = load_credentials(path).get("alice", SHA256)
    assert credential is not None
    assert credential.salt == b"salt"
    assert credential.stored_key == b"k" * 32
    assert credential.iterations == 4096
