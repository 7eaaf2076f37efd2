"""Java's JAAS configuration syntax as Kafka reads it, and Kafka's choice of login modules for a listener.

Two forms, both parsed here as the JVM and Kafka parse them:

- a JAAS *file* (`-Djava.security.auth.login.config=<file>`), read by the JDK's
  `sun.security.provider.ConfigFile`: named entries, each a list of login modules::

      KafkaServer {
          org.apache.kafka.common.security.plain.PlainLoginModule required
              username="admin" password="admin-secret" user_alice="alice-secret";
      };

- the `sasl.jaas.config` *property* value, read by Kafka's `JaasConfig`: one
  `<LoginModule> <flag> key=value ...;` without an entry name or braces.

What both take from `java.io.StreamTokenizer`: whitespace is any character up to
U+0020; `//` and `/* */` are comments, and so is a lone `/` up to the end of its
line (so a path or URL must be quoted); a quoted value ends at its quote and may
use the escapes `\\"`, `\\\\`, `\\n`, `\\t`, `\\r`, `\\b`, `\\f`, `\\a`, `\\v` and
octal `\\0`..`\\377` (a backslash before any other character stands for that
character); `//` inside quotes is text. Control flags are case-insensitive.

The file form also follows `ConfigFile`: unquoted names and values are made of
letters, digits and `. - _ $ *` and must not start with a digit, `.` or `-` (Java
reads those as numbers and refuses them); only double quotes quote; an entry name
may appear once; `${name}` in an option value expands a Java system property
(`${/}` is `/`). The property form follows `JaasConfig`: any printable character
but `; = / " '` may stand unquoted, single quotes quote too, and there is no
expansion. A repeated option keeps its last value in both.

Where this parser is stricter than the JVM, on purpose: a quoted value that is
not closed before the end of its line, or of the text, is an error (Java ends the
value there silently), and a leading byte-order mark is skipped. Text over
`MAX_JAAS_BYTES` (1 MiB) is refused before parsing. Errors are `JaasError`s that
name the file (or property), the line, the column and the entry, and never quote
a value: option values are secrets.

Kafka's lookup for one listener and mechanism (`select_login`): the property
`listener.name.<listener>.<mechanism>.sasl.jaas.config` if set, else the file's
entry `<listener, lowercased>.KafkaServer`, else its `KafkaServer` entry. Entries
are never merged. An entry without login modules counts as absent, as in Java.

The file's name (`jaas_file_location`): the proxy's key `jaas.config.file`
(Kafka has no server key for it), else `-Djava.security.auth.login.config=` in
`KAFKA_OPTS`, split like a shell command line. The key wins over `KAFKA_OPTS`.

Pure: no trio, and no IO but `load_jaas_file`.
"""

from __future__ import annotations

import bisect
import enum
import os
import re
import shlex
import stat
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from proxy.properties import ConfigError, listener_prefix

__all__ = [
    "GSSAPI_LOGIN_MODULES",
    "JAAS_FILE_KEY",
    "JAAS_FILE_SYSTEM_PROPERTY",
    "KAFKA_OPTS",
    "MAX_JAAS_BYTES",
    "MECHANISM_LOGIN_MODULES",
    "OAUTHBEARER_LOGIN_MODULE",
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "ControlFlag",
    "JaasEntry",
    "JaasError",
    "JaasFile",
    "JaasLogin",
    "LoginContext",
    "LoginModule",
    "jaas_file_location",
    "jaas_property_key",
    "java_system_properties",
    "load_jaas_file",
    "parse_jaas",
    "parse_jaas_config",
    "parse_jaas_file",
    "render_jaas_config",
    "render_jaas_file",
    "select_login",
    "server_context_names",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
GSSAPI_LOGIN_MODULES = ("com.sun.security.auth.module.Krb5LoginModule", "com.ibm.security.auth.module.Krb5LoginModule")

MECHANISM_LOGIN_MODULES: Mapping[str, tuple[str, ...]] = {
    "PLAIN": (PLAIN_LOGIN_MODULE,),
    "SCRAM-SHA-256": (SCRAM_LOGIN_MODULE,),
    "SCRAM-SHA-512": (SCRAM_LOGIN_MODULE,),
    "OAUTHBEARER": (OAUTHBEARER_LOGIN_MODULE,),
    "GSSAPI": GSSAPI_LOGIN_MODULES,
}
"""The login module class Kafka reads each mechanism's options from."""

MAX_JAAS_BYTES = 1 << 20
"""A JAAS file or property value larger than this (1 MiB) is refused before it is parsed."""

JAAS_FILE_KEY = "jaas.config.file"
"""The proxy's configuration key naming a JAAS file; it wins over KAFKA_OPTS."""
JAAS_FILE_SYSTEM_PROPERTY = "java.security.auth.login.config"
KAFKA_OPTS = "KAFKA_OPTS"

SERVER_CONTEXT = "KafkaServer"


# --------------------------------------------------------------------------- model


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


@dataclass(frozen=True)
class JaasLogin:
    """The login modules Kafka would use for one listener and mechanism, and where they came from."""

    listener: str
    mechanism: str
    source: str  # "listener.name.client.plain.sasl.jaas.config" or "<file>: entry client.KafkaServer"
    modules: tuple[LoginModule, ...]
    key: str  # the configuration key behind the source (the property, jaas.config.file or KAFKA_OPTS)
    notes: tuple[str, ...] = ()

    @property
    def module(self) -> LoginModule | None:
        """The first module of the class the mechanism reads (None for a mechanism without one, or a file entry
        without ScramLoginModule for SCRAM on the server side)."""
        expected = MECHANISM_LOGIN_MODULES.get(self.mechanism.upper())
        for module in self.modules:
            if expected is None or module.module in expected:
                return module
        return None

    def option(self, key: str) -> str | None:
        """Kafka's `JaasContext.configEntryOption`: the first value of `key` among the mechanism's modules."""
        expected = MECHANISM_LOGIN_MODULES.get(self.mechanism.upper())
        for module in self.modules:
            if expected is not None and module.module not in expected:
                continue
            value = module.options.get(key)
            if value is not None:
                return value
        return None

    @property
    def users(self) -> dict[str, str]:
        """PLAIN's `user_<name>` options, looked up as Kafka's PlainServerCallbackHandler does (first module wins)."""
        found: dict[str, str] = {}
        for module in self.modules:
            if module.module != PLAIN_LOGIN_MODULE:
                continue
            for name, password in module.users.items():
                found.setdefault(name, password)
        return found


# --------------------------------------------------------------------------- tokens

_WORD, _QUOTED, _PUNCT, _BAD, _EOF = "word", "quoted", "punct", "bad", "eof"

_WHITESPACE = re.compile(r"[\x00-\x20]+")
# ConfigFile (StreamTokenizer's defaults plus $ _ - *): a word starts with a letter, $, _, *, U+00A0..U+00FF or
# anything past U+00FF, and goes on over those, digits, '.' and '-'. A digit, '.' or '-' first starts a number.
_FILE_WORD = re.compile(r"[A-Za-z$_*\u00a0-\U0010ffff][A-Za-z0-9$_*.\-\u00a0-\U0010ffff]*")
_FILE_NUMBER = re.compile(r"-?[0-9.][0-9.]*|-")
# JaasConfig: every character from U+0021 to U+0080 but ; = / " ', U+00A0 and up.
_PROPERTY_WORD = re.compile(r"[^\x00-\x20;=/\"'\x81-\x9f]+")
_SPECIAL_IN_QUOTES = {'"': re.compile(r'["\\\r\n]'), "'": re.compile(r"['\\\r\n]")}
_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLOCK_COMMENT_END = re.compile(r"\*/")
_LINE_END = re.compile(r"[\r\n]")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str  # the word, the unquoted value, the punctuation character; "" at the end
    pos: int
    quote: str = ""
    why: str = ""  # for _BAD


class _Lexer:
    """StreamTokenizer as ConfigFile (`file=True`) or JaasConfig (`file=False`) sets it up."""

    def __init__(self, text: str, *, file: bool, source: str, key: str | None) -> None:
        self.text = text
        self.file = file
        self.source = source
        self.key = key
        self.pos = 0
        self.entry: str | None = None
        self._line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        self.lone_slashes: list[int] = []  # a '/' that began a comment to the end of its line, inside an unquoted value
        self.open_comment: int | None = None  # position of a '/*' never closed
        self.gap_start = 0  # where the whitespace and comments before the last token began

    def where(self, pos: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._line_starts, pos) - 1
        return index + 1, pos - self._line_starts[index] + 1

    def error(self, reason: str, pos: int, *, since: int | None = None) -> JaasError:
        """An error at `pos`; `since` (where the module began) decides which comment hints apply."""
        line, column = self.where(min(pos, len(self.text)))
        hints = []
        start = 0 if since is None else min(since, self.gap_start)
        for slash in self.lone_slashes:
            if start <= slash <= pos:
                hints.append(
                    f"the '/' on line {self.where(slash)[0]} starts a comment in JAAS syntax, so the rest of that line is ignored: quote values that contain '/'"
                )
                break
        if self.open_comment is not None and pos >= len(self.text):
            hints.append(f"the '/*' comment opened on line {self.where(self.open_comment)[0]} is never closed")
        if hints:
            reason = f"{reason} ({'; '.join(hints)})"
        return JaasError(reason, file=self.source, line=line, column=column, entry=self.entry, key=self.key)

    def _skip(self) -> None:
        text = self.text
        while True:
            match = _WHITESPACE.match(text, self.pos)
            if match is not None:
                self.pos = match.end()
            if not text.startswith("/", self.pos):
                return
            after = text[self.pos + 1 : self.pos + 2]
            if after == "*":
                end = _BLOCK_COMMENT_END.search(text, self.pos + 2)
                if end is None:
                    self.open_comment = self.pos
                    self.pos = len(text)
                    return
                self.pos = end.end()
            elif after == "/":
                if self.pos and text[self.pos - 1] not in ' \t\r\n;={}"\'':
                    self.lone_slashes.append(self.pos)  # glued to a word, as in an unquoted http://...: worth a hint
                self.pos = self._line_end(self.pos)
            else:
                # A lone '/': StreamTokenizer reads the next character (even a line break), then skips to the end of the line.
                self.lone_slashes.append(self.pos)
                self.pos = self._line_end(min(self.pos + 2, len(text)))

    def _line_end(self, pos: int) -> int:
        found = _LINE_END.search(self.text, pos)
        return len(self.text) if found is None else found.start()

    def next(self) -> _Token:
        self.gap_start = self.pos
        self._skip()
        text, pos = self.text, self.pos
        if pos >= len(text):
            return _Token(_EOF, "", pos)
        char = text[pos]
        if char in "\"'":
            return self._quoted(char)
        if char in ";=" or (self.file and char in "{}"):
            self.pos = pos + 1
            return _Token(_PUNCT, char, pos)
        word = (_FILE_WORD if self.file else _PROPERTY_WORD).match(text, pos)
        if word is not None:
            self.pos = word.end()
            return _Token(_WORD, word.group(), pos)
        if self.file:
            number = _FILE_NUMBER.match(text, pos)
            if number is not None:
                self.pos = number.end()
                return _Token(_BAD, "", pos, why="a name or value starting with a digit, '.' or '-', which Java's JAAS parser refuses unless quoted")
        self.pos = pos + 1
        shown = repr(char) if 0x21 <= ord(char) < 0x7F else f"the character U+{ord(char):04X}"
        return _Token(_BAD, "", pos, why=f"{shown}, which must be quoted")

    def _quoted(self, quote: str) -> _Token:
        text, start = self.text, self.pos
        special = _SPECIAL_IN_QUOTES[quote]
        out: list[str] = []
        index = start + 1
        while True:
            match = special.search(text, index)
            if match is None or match.group() in "\r\n":
                stop = len(text) if match is None else match.start()
                end = "the end of the line" if match is not None else "the end of the text"
                raise self.error(f"a quoted value is not closed before {end} (Java would end it there; close the quote)", stop, since=start)
            out.append(text[index : match.start()])
            index = match.end()
            if match.group() == quote:
                self.pos = index
                if self.file and quote == "'":
                    return _Token(_BAD, "", start, why="a value in single quotes, which Java's JAAS file parser refuses: use double quotes")
                return _Token(_QUOTED, "".join(out), start, quote=quote)
            # a backslash escape, as StreamTokenizer reads it
            if index >= len(text):
                raise self.error("a quoted value ends with a lone backslash", index, since=start)
            escaped = text[index]
            if "0" <= escaped <= "7":
                digits = 1
                limit = 3 if escaped <= "3" else 2
                while digits < limit and index + digits < len(text) and "0" <= text[index + digits] <= "7":
                    digits += 1
                out.append(chr(int(text[index : index + digits], 8)))
                index += digits
            else:
                out.append(_ESCAPES.get(escaped, escaped))
                index += 1


def _shown(name: str, limit: int = 80) -> str:
    """A class, entry or option name as an error message shows it: at most `limit` characters, printable."""
    short = name if len(name) <= limit else name[:limit] + "..."
    return short if short and short.isprintable() and " " not in short else repr(short)


def _describe(token: _Token, end: str) -> str:
    if token.kind == _EOF:
        return end
    if token.kind == _PUNCT:
        return repr(token.text)
    if token.kind == _QUOTED:
        return "a quoted value"
    if token.kind == _BAD:
        return token.why
    return "a name"


def _check_size(text: str, *, source: str, key: str | None) -> None:
    if len(text) > MAX_JAAS_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_JAAS_BYTES:
        raise JaasError(f"larger than {MAX_JAAS_BYTES} bytes, the limit for JAAS configuration", file=source, key=key)


_FLAGS = {flag.name: flag for flag in ControlFlag}


def _flag(lexer: _Lexer, token: _Token, shown: str, *, since: int) -> ControlFlag:
    names = "required, requisite, sufficient or optional"
    if token.kind not in (_WORD, _QUOTED):
        end = "the end of the file" if lexer.file else "the end of the value"
        raise lexer.error(f"expected a control flag ({names}) after {shown}, found {_describe(token, end)}", token.pos, since=since)
    flag = _FLAGS.get(token.text.upper())
    if flag is None:
        hint = "" if lexer.file or token.text not in ("{", "}") else "; the property holds one `<LoginModule> <flag> key=value ...;` without an entry name or braces"
        raise lexer.error(f"invalid control flag for {shown}: must be {names}{hint}", token.pos, since=since)
    return flag


# --------------------------------------------------------------------------- the file form


def _expand(value: str, properties: Mapping[str, str]) -> str | None:
    """sun.security.util.PropertyExpander: `${name}` -> the system property, `${/}` -> '/', `${{...}}` kept as is.

    Returns None when a property is not defined."""
    start = value.find("${")
    if start < 0:
        return value
    out: list[str] = []
    copied = 0
    while start >= 0:
        out.append(value[copied:start])
        end = start + 2
        if end < len(value) and value[end] == "{":
            close = value.find("}}", end)
            if close < 0 or close + 2 == len(value):
                out.append(value[start:])
                return "".join(out)
            out.append(value[start : close + 2])
            copied = close + 2
        else:
            close = value.find("}", end)
            if close < 0:
                out.append(value[start:])
                return "".join(out)
            name = value[end:close]
            if name == "/":
                out.append("/")
            elif name in properties:
                out.append(properties[name])
            else:
                return None
            copied = close + 1
        start = value.find("${", copied)
    out.append(value[copied:])
    return "".join(out)


def parse_jaas_file(
    text: str,
    *,
    source: str = "<JAAS file>",
    key: str | None = None,
    system_properties: Mapping[str, str] | None = None,
) -> JaasFile:
    """Parse a JAAS file's text as the JDK's ConfigFile does; `${name}` in option values expands `system_properties`."""
    _check_size(text, source=source, key=key)
    if text.startswith("\ufeff"):
        text = text[1:]
    properties = {} if system_properties is None else system_properties
    lexer = _Lexer(text, file=True, source=source, key=key)
    contexts: dict[str, LoginContext] = {}
    token = lexer.next()
    eof = "the end of the file"
    while token.kind != _EOF:
        lexer.entry = None
        if token.kind not in (_WORD, _QUOTED):
            raise lexer.error(f"expected an entry name such as KafkaServer, found {_describe(token, eof)}", token.pos)
        name, name_pos = token.text, token.pos
        lexer.entry = _shown(name)
        token = lexer.next()
        if token.text != "{" or token.kind != _PUNCT:
            raise lexer.error(f"expected '{{' after the entry name, found {_describe(token, eof)}", token.pos)
        modules: list[LoginModule] = []
        token = lexer.next()
        while not (token.kind == _PUNCT and token.text == "}"):
            since = token.pos
            if token.kind not in (_WORD, _QUOTED):
                raise lexer.error(f"expected a login module class name or '}}' ending the entry, found {_describe(token, eof)}", token.pos, since=since)
            module, module_line = token.text, lexer.where(token.pos)[0]
            shown = _shown(module)
            flag = _flag(lexer, lexer.next(), shown, since=since)
            options: dict[str, str] = {}
            token = lexer.next()
            while not (token.kind == _PUNCT and token.text == ";"):
                if token.kind not in (_WORD, _QUOTED):
                    raise lexer.error(f"expected an option name or ';' ending the options of {shown}, found {_describe(token, eof)}", token.pos, since=since)
                name_token = token
                token = lexer.next()
                if not (token.kind == _PUNCT and token.text == "="):
                    raise lexer.error(f"expected '=' after an option name of {shown}, found {_describe(token, eof)}", token.pos, since=since)
                token = lexer.next()
                if token.kind not in (_WORD, _QUOTED):
                    raise lexer.error(f"expected a value for option {_shown(name_token.text)} of {shown}, found {_describe(token, eof)}", token.pos, since=since)
                expanded = _expand(token.text, properties) if token.text else token.text
                if expanded is None:
                    raise lexer.error(f"option {_shown(name_token.text)} of {shown} names a Java system property that is not set", token.pos, since=since)
                if token.text and expanded == "":
                    raise lexer.error(f"option {_shown(name_token.text)} of {shown} expands to an empty value", token.pos, since=since)
                options[name_token.text] = expanded
                token = lexer.next()
            modules.append(LoginModule(module, flag, options, module_line))
            token = lexer.next()
        token = lexer.next()
        if not (token.kind == _PUNCT and token.text == ";"):
            raise lexer.error(f"expected ';' after the '}}' that closes the entry, found {_describe(token, eof)}", token.pos)
        if name in contexts:
            raise lexer.error(f"the entry is defined twice (first on line {contexts[name].line}); Java refuses that", name_pos)
        contexts[name] = LoginContext(name, tuple(modules), lexer.where(name_pos)[0])
        token = lexer.next()
    return JaasFile(source, contexts)


def load_jaas_file(path: str, *, key: str | None = None, system_properties: Mapping[str, str] | None = None) -> JaasFile:
    """Read and parse the JAAS file at `path` (UTF-8, bytes that are not UTF-8 replaced as the JVM's reader does)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise JaasError("not a regular file", file=path, key=key)
        if info.st_size > MAX_JAAS_BYTES:
            raise JaasError(f"larger than {MAX_JAAS_BYTES} bytes, the limit for JAAS configuration", file=path, key=key)
        with open(path, "rb") as handle:
            data = handle.read(MAX_JAAS_BYTES + 1)
    except OSError as exc:
        raise JaasError(f"cannot read the JAAS file: {exc.strerror or exc}", file=path, key=key) from None
    if len(data) > MAX_JAAS_BYTES:
        raise JaasError(f"larger than {MAX_JAAS_BYTES} bytes, the limit for JAAS configuration", file=path, key=key)
    return parse_jaas_file(data.decode("utf-8", "replace"), source=path, key=key, system_properties=system_properties)


# --------------------------------------------------------------------------- the property form


def parse_jaas_config(text: str, *, key: str = "sasl.jaas.config") -> tuple[LoginModule, ...]:
    """Parse a `sasl.jaas.config` value as Kafka's JaasConfig does: login modules, each `<class> <flag> k=v ...;`.

    Kafka then wants exactly one module (see `select_login`); this returns all of them."""
    _check_size(text, source=key, key=key)
    lexer = _Lexer(text, file=False, source=key, key=key)
    eof = "the end of the value"
    modules: list[LoginModule] = []
    token = lexer.next()
    while token.kind != _EOF:
        since = token.pos
        if token.kind not in (_WORD, _QUOTED):
            raise lexer.error(f"expected a login module class name, found {_describe(token, eof)}", token.pos, since=since)
        module, module_line = token.text, lexer.where(token.pos)[0]
        shown = _shown(module)
        token = lexer.next()
        if token.kind == _EOF:
            raise lexer.error(f"no control flag after {shown} (required, requisite, sufficient or optional)", token.pos, since=since)
        flag = _flag(lexer, token, shown, since=since)
        options: dict[str, str] = {}
        token = lexer.next()
        while token.kind != _EOF and not (token.kind == _PUNCT and token.text == ";"):
            if token.kind not in (_WORD, _QUOTED):
                raise lexer.error(f"expected an option name or ';' ending the options of {shown}, found {_describe(token, eof)}", token.pos, since=since)
            name = token.text
            token = lexer.next()
            if not (token.kind == _PUNCT and token.text == "="):
                raise lexer.error(f"expected '=' after an option name of {shown}, found {_describe(token, eof)}", token.pos, since=since)
            token = lexer.next()
            if token.kind not in (_WORD, _QUOTED):
                raise lexer.error(f"no value for option {_shown(name)} of {shown}, found {_describe(token, eof)}", token.pos, since=since)
            options[name] = token.text
            token = lexer.next()
        if token.kind == _EOF:
            raise lexer.error(f"the options of {shown} are not ended by ';'", token.pos, since=since)
        modules.append(LoginModule(module, flag, options, module_line))
        token = lexer.next()
    if not modules:
        raise JaasError("names no login module (expected `<LoginModule> <flag> key=value ...;`)", file=key, key=key)
    return tuple(modules)


def parse_jaas(key: str, text: str) -> LoginModule:
    """The one login module of a `sasl.jaas.config` property, as Kafka requires it (ConfigError otherwise)."""
    modules = parse_jaas_config(text, key=key)
    if len(modules) != 1:
        raise JaasError(f"holds {len(modules)} login modules; Kafka's sasl.jaas.config takes exactly 1", file=key, key=key)
    return modules[0]


# --------------------------------------------------------------------------- rendering (the inverse of the parsers)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


def _render_module(module: LoginModule, indent: str) -> str:
    options = "".join(f"\n{indent}    {name}={_quote(value)}" for name, value in module.options.items())
    return f"{indent}{module.module} {module.flag.value}{options};"


def _check_renderable(module: LoginModule, *, file: bool) -> None:
    names = [module.module, *module.options]
    word = _FILE_WORD if file else _PROPERTY_WORD
    for name in names:
        if word.fullmatch(name) is None:
            raise ValueError(f"{name!r} cannot be written unquoted as a class or option name")
    if file and any("${" in value or value == "" for value in module.options.values()):
        raise ValueError("a JAAS file cannot hold an empty value or a literal '${'")


def render_jaas_config(modules: Iterable[LoginModule]) -> str:
    """A `sasl.jaas.config` value that parse_jaas_config reads back as `modules`."""
    rendered = []
    for module in modules:
        _check_renderable(module, file=False)
        rendered.append(_render_module(module, "").replace("\n    ", " "))
    return " ".join(rendered)


def render_jaas_file(contexts: Iterable[LoginContext]) -> str:
    """A JAAS file that parse_jaas_file reads back as `contexts` (without system properties to expand)."""
    blocks = []
    for context in contexts:
        if _FILE_WORD.fullmatch(context.name) is None:
            raise ValueError(f"{context.name!r} cannot be written as an entry name")
        for module in context.modules:
            _check_renderable(module, file=True)
        body = "".join(_render_module(module, "    ") + "\n" for module in context.modules)
        blocks.append(f"{context.name} {{\n{body}}};\n")
    text = "\n".join(blocks)
    return "\n" + text if text.startswith("\ufeff") else text  # a leading U+FEFF would be read as a byte-order mark


# --------------------------------------------------------------------------- Kafka's lookup


def jaas_property_key(listener: str, mechanism: str) -> str:
    """`listener.name.<listener>.<mechanism>.sasl.jaas.config`, both lowercased as Kafka does."""
    return f"{listener_prefix(listener, mechanism)}sasl.jaas.config"


def server_context_names(listener: str) -> tuple[str, str]:
    """The file entries Kafka tries for a listener, in order: `<listener, lowercased>.KafkaServer`, `KafkaServer`."""
    return f"{listener.lower()}.{SERVER_CONTEXT}", SERVER_CONTEXT


def _check_modules(login: JaasLogin, *, from_property: bool, role: Literal["server", "client"]) -> None:
    mechanism = login.mechanism.upper()
    expected = MECHANISM_LOGIN_MODULES.get(mechanism)
    names = ", ".join(_shown(module.module) for module in login.modules)
    if mechanism == "OAUTHBEARER" and len(login.modules) != 1:
        # Kafka's JaasOptionsUtils: "Must supply exactly 1 non-null JAAS mechanism configuration".
        raise JaasError(f"OAUTHBEARER takes exactly 1 login module, found {len(login.modules)} ({names})", file=login.source, key=login.key)
    if expected is None or login.module is not None:
        return
    if mechanism.startswith("SCRAM-") and role == "server" and not from_property:
        return  # Kafka's SCRAM server reads no JAAS option: a shared KafkaServer entry may lack ScramLoginModule
    wanted = " or ".join(expected)
    raise JaasError(f"{login.mechanism} needs the login module {wanted}, found {names}", file=login.source, key=login.key)


def select_login(
    props: Mapping[str, str],
    listener: str,
    mechanism: str,
    jaas_file: JaasFile | None = None,
    *,
    file_key: str | None = None,
    role: Literal["server", "client"] = "server",
) -> JaasLogin:
    """Kafka's `JaasContext.loadServerContext` for `listener` and `mechanism`, with the login module check.

    The property `listener.name.<l>.<mech>.sasl.jaas.config` first (exactly one module),
    then `jaas_file`'s `<l>.KafkaServer` entry, then its `KafkaServer` entry; never merged.
    `role="client"` is the proxy's own login to a controller listener, which Kafka's
    brokers look up the same way. The mechanism's module must be there (PLAIN:
    PlainLoginModule, SCRAM: ScramLoginModule, OAUTHBEARER: OAuthBearerLoginModule and
    nothing else, GSSAPI: Krb5LoginModule), except that a server's file entry may
    lack ScramLoginModule, as Kafka reads SCRAM credentials elsewhere. `file_key` is
    the key that named the file (see `jaas_file_location`), for error messages.
    JaasError when nothing is found or the module does not fit."""
    key = jaas_property_key(listener, mechanism)
    notes: tuple[str, ...] = ()
    if "sasl.jaas.config" in props and key not in props:
        notes = (f"sasl.jaas.config is ignored for a listener, as Kafka ignores it: set {key}",)
    text = props.get(key)
    if text is not None:
        modules = parse_jaas_config(text.strip(), key=key)
        if len(modules) != 1:
            raise JaasError(f"holds {len(modules)} login modules; Kafka's sasl.jaas.config takes exactly 1", file=key, key=key)
        login = JaasLogin(listener, mechanism, key, modules, key, notes)
        _check_modules(login, from_property=True, role=role)
        return login
    names = server_context_names(listener)
    if jaas_file is None:
        raise JaasError(
            f"listener {listener} uses {mechanism} but neither {key} nor a JAAS file ({JAAS_FILE_KEY}, or -D{JAAS_FILE_SYSTEM_PROPERTY}= in {KAFKA_OPTS}) is set",
            key=key,
        )
    origin = file_key or jaas_file.source
    for name in names:
        context = jaas_file.context(name)
        if context is not None:
            login = JaasLogin(listener, mechanism, f"{jaas_file.source}: entry {name}", context.modules, origin, notes)
            _check_modules(login, from_property=False, role=role)
            return login
    raise JaasError(
        f"listener {listener} uses {mechanism} but {key} is not set and the JAAS file has neither an entry {names[0]} nor {names[1]} with a login module",
        file=jaas_file.source,
        key=origin,
    )


# --------------------------------------------------------------------------- where the file is named


def _kafka_opts_words(environ: Mapping[str, str]) -> list[str]:
    text = environ.get(KAFKA_OPTS, "")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise JaasError(f"cannot split {KAFKA_OPTS} like a shell command line: {exc}", file=KAFKA_OPTS, key=KAFKA_OPTS) from None


def java_system_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The Java system properties a JAAS file may expand with `${name}`: `-Dname=value` in KAFKA_OPTS (the last
    one wins, as in the JVM) over user.home, user.name, file.separator, path.separator and line.separator."""
    found = {"file.separator": "/", "path.separator": ":", "line.separator": "\n"}
    if environ.get("HOME"):
        found["user.home"] = environ["HOME"]
    if environ.get("USER"):
        found["user.name"] = environ["USER"]
    for word in _kafka_opts_words(environ):
        if word.startswith("-D") and len(word) > 2:
            name, _, value = word[2:].partition("=")
            found[name] = value
    return found


_URL_SCHEME = re.compile(r"(?i)(file|https?|jar|ftp):")


def jaas_file_location(props: Mapping[str, str], environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The JAAS file to read and the key that named it: `jaas.config.file` in `props`, which wins, else
    `-Djava.security.auth.login.config=<file>` in KAFKA_OPTS (the last one; `==<file>` as well; a `file:` URL;
    `${name}` expanded from the other -D options). None when neither names one."""
    configured = props.get(JAAS_FILE_KEY, "").strip()
    if configured:
        return configured, JAAS_FILE_KEY
    value: str | None = None
    prefix = f"-D{JAAS_FILE_SYSTEM_PROPERTY}="
    for word in _kafka_opts_words(environ):
        if word.startswith(prefix):
            value = word[len(prefix) :]
        elif word == f"-D{JAAS_FILE_SYSTEM_PROPERTY}":
            value = ""
    if value is None:
        return None
    source = f"{KAFKA_OPTS} (-D{JAAS_FILE_SYSTEM_PROPERTY})"
    if value.startswith("="):
        value = value[1:]  # `==file`: only this file, which is all the proxy reads anyway
    expanded = _expand(value, java_system_properties(environ))
    if expanded is None:
        raise JaasError(f"-D{JAAS_FILE_SYSTEM_PROPERTY} names a Java system property that is not set", file=KAFKA_OPTS, key=KAFKA_OPTS)
    scheme = _URL_SCHEME.match(expanded)
    if scheme is not None:
        if scheme.group(1).lower() != "file":
            raise JaasError(f"-D{JAAS_FILE_SYSTEM_PROPERTY} is a {scheme.group(1)} URL; the proxy reads only files", file=KAFKA_OPTS, key=KAFKA_OPTS)
        path = expanded[len(scheme.group()) :]
        if path.startswith("//"):  # file://host/path
            slash = path.find("/", 2)
            host, path = (path[2:], "") if slash < 0 else (path[2:slash], path[slash:])
            if host.lower() not in ("", "localhost"):
                raise JaasError(f"-D{JAAS_FILE_SYSTEM_PROPERTY} is a file URL on another host; the proxy reads only local files", file=KAFKA_OPTS, key=KAFKA_OPTS)
        expanded = urllib.parse.unquote(path, errors="replace")
    if not expanded:
        raise JaasError(f"-D{JAAS_FILE_SYSTEM_PROPERTY} names no file", file=KAFKA_OPTS, key=KAFKA_OPTS)
    return expanded, source
