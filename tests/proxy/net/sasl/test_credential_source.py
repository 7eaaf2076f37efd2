"""The listener's view of the credentials file follows changes and survives a bad edit."""

import os
from pathlib import Path

import pytest

from proxy.net.sasl.credential_source import ScramCredentialSource
from proxy.net.sasl.credentials import add_user
from proxy.properties import ConfigError

KEY = "listener.name.client.sasl.scram.credentials.file"


def test_a_missing_file_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        ScramCredentialSource(tmp_path / "none.json", KEY)
    assert error.value.key == KEY


def test_changes_are_picked_up_and_a_broken_file_keeps_the_last_good_one(tmp_path: Path) -> None:
    path = tmp_path / "scram.json"
    add_user(path, "alice", "a", ["SCRAM-SHA-256"])
    source = ScramCredentialSource(path, KEY)
    lookup = source.lookup("SCRAM-SHA-256")
    assert lookup("alice") is not None and lookup("bob") is None

    add_user(path, "bob", "b", ["SCRAM-SHA-256"])
    assert lookup("bob") is not None
    assert source.reloads == 1

    path.write_text("{ not json")
    os.utime(path, ns=(1, 1))  # a different identity even within one clock tick
    assert lookup("bob") is not None
    assert source.credentials.users() == ["alice", "bob"]
