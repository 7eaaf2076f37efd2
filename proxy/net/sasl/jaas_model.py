"""What a JAAS text parses into (login modules, a file's named entries), and the error that says where it went wrong.

The parsers are proxy/net/sasl/jaas_parser.py; Kafka's choice among the entries is proxy/net/sasl/jaas.py.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from proxy.properties import ConfigError

__all__ = ["MAX_JAAS_BYTES", "ControlFlag", "JaasEntry", "JaasError", "JaasFile", "LoginContext", "LoginModule"]

MAX_JAAS_BYTES = 1 << 20
"""A JAAS file or property value larger than this (1 MiB) is refused before it is parsed."""


class JaasError(ConfigError):
    """A JAAS file or property that cannot be used: where (file or property, line, column, entry) and why.

    A ConfigError, so the tools report it like any bad configuration. `key` is the
    configuration key (or environment variable) behind the text; values are never quoted."""

    def __init__(
        self,
        reason: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        entry: str | None = None,
        key: str | None = None,
    ) -> None:
        super().__init__(key or file or "", "[hidden]", reason)
        self.file = file
        self.line = line
        self.column = column
        self.entry = entry
        where = [file] if file else []
        if line is not None:
            where.append(f"line {line}" if column is None else f"line {line}, column {column}")
        if entry is not None:
            where.append(f"entry {entry}")
        self.message = f"{', '.join(where)}: {reason}" if where else reason
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


class ControlFlag(enum.Enum):
    REQUIRED = "required"
    REQUISITE = "requisite"
    SUFFICIENT = "sufficient"
    OPTIONAL = "optional"


@dataclass(frozen=True)
class LoginModule:
    """One login module line (Java's AppConfigurationEntry): class name, control flag, options."""

    module: str
    flag: ControlFlag = ControlFlag.REQUIRED
    options: Mapping[str, str] = field(default_factory=dict, repr=False)  # secrets: never in a repr
    line: int = field(default=0, compare=False)

    @property
    def users(self) -> dict[str, str]:
        """`user_<name>="<password>"` options of a server-side PlainLoginModule."""
        return {k[len("user_") :]: v for k, v in self.options.items() if k.startswith("user_")}


JaasEntry = LoginModule
"""The name the SASL settings have used for one login module."""


@dataclass(frozen=True)
class LoginContext:
    """One named entry of a JAAS file (`KafkaServer { ... };`)."""

    name: str
    modules: tuple[LoginModule, ...]
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class JaasFile:
    """A parsed JAAS file: its entries by name, in file order."""

    source: str
    contexts: Mapping[str, LoginContext]

    def context(self, name: str) -> LoginContext | None:
        """The entry `name` if it has login modules (Java treats an empty entry as absent)."""
        found = self.contexts.get(name)
        return found if found is not None and found.modules else None
