"""The SCRAM credentials file a listener verifies logins against, re-read when it changes.

`envelope-proxy scram add-user` replaces the file atomically while a server is
running; checking the file's identity (inode, size, mtime) at each login makes
the change take effect for the next login without a restart. A file that turns
bad after start-up keeps the last good snapshot in force and is logged, so an
editing mistake never locks every user out.
"""

import logging
import os
from collections.abc import Callable
from pathlib import Path

from proxy.net.sasl.credentials import ScramCredentials, load_credentials
from proxy.net.sasl.scram import ScramCredential

log = logging.getLogger(__name__)

_Identity = tuple[int, int, int]


def _identity(path: Path) -> _Identity | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class ScramCredentialSource:
    """Loads the file once (a bad file is a ConfigError naming `key`), then follows its changes."""

    def __init__(self, path: str | os.PathLike[str], key: str) -> None:
        self.path = Path(path)
        self.key = key
        self._seen = _identity(self.path)
        self._credentials = load_credentials(self.path, key)
        self.reloads = 0

    @property
    def credentials(self) -> ScramCredentials:
        current = _identity(self.path)
        if current is not None and current != self._seen:
            self._seen = current
            try:
                self._credentials = load_credentials(self.path, self.key)
                self.reloads += 1
                log.info("reloaded SCRAM credentials from %s (%d users)", self.path, len(self._credentials.users()))
            except ValueError as exc:
                log.error("keeping the previous SCRAM credentials: %s", exc)
        return self._credentials

    def lookup(self, mechanism: str) -> Callable[[str], ScramCredential | None]:
        """A `ScramServer` lookup that sees the file as it is when the client names its user."""

        def find(user: str) -> ScramCredential | None:
            return self.credentials.get(user, mechanism)

        return find

    def effective(self) -> dict[str, object]:
        return {"file": str(self.path), "users": len(self.credentials.users())}
