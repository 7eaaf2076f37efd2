"""SCRAM credential file: salted keys per user and mechanism, never passwords.

Format (version 1)::

    {"version": 1,
     "users": {"alice": {"SCRAM-SHA-256": {"salt": "<b64>", "stored_key": "<b64>",
                                           "server_key": "<b64>", "iterations": 4096}}}}

A stolen file lets an attacker impersonate the server or brute-force the
passwords offline, but not log in directly; it is still written with mode 0600.
Writers replace the file atomically so the listener never reads half a file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from proxy.files import write_atomically
from proxy.net.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramCredential, make_credential
from proxy.properties import ConfigError

__all__ = ["DEFAULT_KEY", "FORMAT_VERSION", "ScramCredentials", "add_user", "load_credentials", "remove_user"]

DEFAULT_KEY = "sasl.scram.credentials.file"
FORMAT_VERSION = 1
_FIELDS = ("salt", "stored_key", "server_key", "iterations")


class ScramCredentials:
    """An immutable snapshot of the file; reload by calling `load_credentials` again."""

    def __init__(self, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
        self._users = {user: dict(mechanisms) for user, mechanisms in users.items()}

    def users(self) -> list[str]:
        return sorted(self._users)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def lookup(self, mechanism: str) -> Callable[[str], ScramCredential | None]:
        """The `ScramServer` lookup for one mechanism (a user without it is unknown there)."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"Unsupported SCRAM mechanism {mechanism!r}; supported: {', '.join(MECHANISMS)}")

        def find(user: str) -> ScramCredential | None:
            return self.get(user, mechanism)

        return find


def load_credentials(path: str | os.PathLike[str], key: str = DEFAULT_KEY) -> ScramCredentials:
    """Read and fully validate the file, so a bad entry fails at start-up rather than at login."""
    shown = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(key, shown, "the file does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(key, shown, f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(key, shown, f"the file cannot be read: {exc.strerror or exc}") from None
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates)
        return ScramCredentials(_parse_document(document))
    except json.JSONDecodeError as exc:
        raise ConfigError(key, shown, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except _Invalid as exc:
        raise ConfigError(key, shown, str(exc)) from None


class _Invalid(Exception):
    """A precise reason; `load_credentials` adds the key and the path."""


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """json silently keeps the last of two equal keys; a doubled user is more likely a mistake."""
    result: dict[str, object] = {}
    for name, value in pairs:
        if name in result:
            raise _Invalid(f"the name {name!r} appears twice in one object")
        result[name] = value
    return result


def _parse_document(document: object) -> dict[str, dict[str, ScramCredential]]:
    if not isinstance(document, dict):
        raise _Invalid(f"the top level must be a JSON object, not {_kind(document)}")
    unexpected = sorted(set(document) - {"version", "users"})
    if unexpected:
        raise _Invalid(f"unexpected top-level field {unexpected[0]!r}")
    if "version" not in document:
        raise _Invalid("the field 'version' is missing")
    version = document["version"]
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise _Invalid(f"unsupported version {version!r} (expected {FORMAT_VERSION})")
    users = document.get("users")
    if not isinstance(users, dict):
        raise _Invalid("the field 'users' is missing" if users is None else f"'users' must be an object, not {_kind(users)}")
    parsed: dict[str, dict[str, ScramCredential]] = {}
    for user, mechanisms in users.items():
        if not user:
            raise _Invalid("a user name is empty")
        if not isinstance(mechanisms, dict):
            raise _Invalid(f"user {user!r}: expected an object of mechanisms, not {_kind(mechanisms)}")
        if not mechanisms:
            raise _Invalid(f"user {user!r}: has no SCRAM credentials")
        parsed[user] = {mechanism: _parse_credential(user, mechanism, entry) for mechanism, entry in mechanisms.items()}
    return parsed


def _parse_credential(user: str, mechanism: str, entry: object) -> ScramCredential:
    where = f"user {user!r}, {mechanism}"
    if mechanism not in MECHANISMS:
        raise _Invalid(f"user {user!r}: unknown mechanism {mechanism!r} (supported: {', '.join(MECHANISMS)})")
    if not isinstance(entry, dict):
        raise _Invalid(f"{where}: expected an object, not {_kind(entry)}")
    unexpected = sorted(set(entry) - set(_FIELDS))
    if unexpected:
        raise _Invalid(f"{where}: unexpected field {unexpected[0]!r} (the file holds salted keys only)")
    for field in _FIELDS:
        if field not in entry:
            raise _Invalid(f"{where}: the field {field!r} is missing")
    iterations = entry["iterations"]
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        raise _Invalid(f"{where}: 'iterations' must be an integer, not {_kind(iterations)}")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise _Invalid(f"{where}: 'iterations' {iterations} is outside {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    digest_size = hashlib.new(MECHANISMS[mechanism]).digest_size
    salt = _decode(where, "salt", entry["salt"])
    if not salt:
        raise _Invalid(f"{where}: 'salt' is empty")
    keys: dict[str, bytes] = {}
    for field in ("stored_key", "server_key"):
        keys[field] = _decode(where, field, entry[field])
        if len(keys[field]) != digest_size:
            raise _Invalid(f"{where}: {field!r} is {len(keys[field])} bytes, expected {digest_size}")
    return ScramCredential(salt=salt, stored_key=keys["stored_key"], server_key=keys["server_key"], iterations=iterations)


def _decode(where: str, field: str, value: object) -> bytes:
    if not isinstance(value, str):
        raise _Invalid(f"{where}: {field!r} must be a base64 string, not {_kind(value)}")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise _Invalid(f"{where}: {field!r} is not valid base64") from None


def _kind(value: object) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _encode(credential: ScramCredential) -> dict[str, object]:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return {
        "salt": b64(credential.salt),
        "stored_key": b64(credential.stored_key),
        "server_key": b64(credential.server_key),
        "iterations": credential.iterations,
    }


def _read_for_update(path: Path) -> dict[str, dict[str, ScramCredential]]:
    """The current entries; a missing file is an empty store, a broken one is left alone (ConfigError)."""
    if not path.exists():
        return {}
    store = load_credentials(path)
    return {user: {m: c for m in MECHANISMS if (c := store.get(user, m)) is not None} for user in store.users()}


def _write(path: Path, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
    """Temp file + fsync + rename: readers see the old or the new file, never a torn one."""
    document = {
        "version": FORMAT_VERSION,
        "users": {user: {m: _encode(c) for m, c in sorted(users[user].items())} for user in sorted(users)},
    }
    data = (json.dumps(document, indent=2, sort_keys=False) + "\n").encode("utf-8")
    write_atomically(path, data, mode=0o600)


def _check_user(user: str) -> None:
    if not isinstance(user, str) or not user:
        raise ValueError(f"Invalid SCRAM user name {user!r}: must be a non-empty string")


def add_user(path: str | os.PathLike[str], user: str, password: str, mechanisms: Sequence[str], iterations: int = MIN_ITERATIONS) -> None:
    """Add or replace the user's credentials for `mechanisms`; its other mechanisms stay as they were."""
    _check_user(user)
    if isinstance(mechanisms, str):
        raise ValueError(f"mechanisms must be a sequence of names, not the string {mechanisms!r}")
    if not mechanisms:
        raise ValueError("at least one SCRAM mechanism is required")
    for mechanism in mechanisms:
        if mechanism not in MECHANISMS:
            raise ValueError(f"Unsupported SCRAM mechanism {mechanism!r}; supported: {', '.join(MECHANISMS)}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"Invalid SCRAM iterations {iterations!r}: must be an integer between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    target = Path(path)
    users = _read_for_update(target)
    entry = users.setdefault(user, {})
    for mechanism in mechanisms:
        entry[mechanism] = make_credential(mechanism, password, iterations=iterations)
    _write(target, users)


def remove_user(path: str | os.PathLike[str], user: str) -> bool:
    """Drop every credential of `user`; False (and no file written) when it was not there."""
    _check_user(user)
    target = Path(path)
    users = _read_for_update(target)
    if user not in users:
        return False
    del users[user]
    _write(target, users)
    return True
