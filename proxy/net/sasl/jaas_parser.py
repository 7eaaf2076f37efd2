"""Java's JAAS configuration syntax as Kafka reads it: a JAAS file, a `sasl.jaas.config` value.

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
`MAX_JAAS_BYTES` (1 MiB, proxy/net/sasl/jaas_model.py) is refused before parsing. Errors are `JaasError`s that
name the file (or property), the line, the column and the entry, and never quote
a value: option values are secrets.

Pure: no trio, and no IO but `load_jaas_file`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from proxy.net.sasl.jaas_lexer import EOF, PUNCT, QUOTED, WORD, Lexer, Token, check_size, describe, shown_name
from proxy.net.sasl.jaas_model import MAX_JAAS_BYTES, ControlFlag, JaasError, JaasFile, LoginContext, LoginModule
from proxy.net.sasl.system_properties import expand_system_properties

__all__ = ["load_jaas_file", "parse_jaas", "parse_jaas_config", "parse_jaas_file"]


_FLAGS = {flag.name: flag for flag in ControlFlag}


def _flag(lexer: Lexer, token: Token, shown: str, *, since: int) -> ControlFlag:
    names = "required, requisite, sufficient or optional"
    if token.kind not in (WORD, QUOTED):
        end = "the end of the file" if lexer.file else "the end of the value"
        raise lexer.error(f"expected a control flag ({names}) after {shown}, found {describe(token, end)}", token.pos, since=since)
    flag = _FLAGS.get(token.text.upper())
    if flag is None:
        hint = "" if lexer.file or token.text not in ("{", "}") else "; the property holds one `<LoginModule> <flag> key=value ...;` without an entry name or braces"
        raise lexer.error(f"invalid control flag for {shown}: must be {names}{hint}", token.pos, since=since)
    return flag


# --------------------------------------------------------------------------- the file form


def parse_jaas_file(
    text: str,
    *,
    source: str = "<JAAS file>",
    key: str | None = None,
    system_properties: Mapping[str, str] | None = None,
) -> JaasFile:
    """Parse a JAAS file's text as the JDK's ConfigFile does; `${name}` in option values expands `system_properties`."""
    check_size(text, source=source, key=key)
    if text.startswith("\ufeff"):
        text = text[1:]
    properties = {} if system_properties is None else system_properties
    lexer = Lexer(text, file=True, source=source, key=key)
    contexts: dict[str, LoginContext] = {}
    token = lexer.next()
    eof = "the end of the file"
    while token.kind != EOF:
        lexer.entry = None
        if token.kind not in (WORD, QUOTED):
            raise lexer.error(f"expected an entry name such as KafkaServer, found {describe(token, eof)}", token.pos)
        name, name_pos = token.text, token.pos
        lexer.entry = shown_name(name)
        token = lexer.next()
        if token.text != "{" or token.kind != PUNCT:
            raise lexer.error(f"expected '{{' after the entry name, found {describe(token, eof)}", token.pos)
        modules: list[LoginModule] = []
        token = lexer.next()
        while not (token.kind == PUNCT and token.text == "}"):
            since = token.pos
            if token.kind not in (WORD, QUOTED):
                raise lexer.error(f"expected a login module class name or '}}' ending the entry, found {describe(token, eof)}", token.pos, since=since)
            module, module_line = token.text, lexer.where(token.pos)[0]
            shown = shown_name(module)
            flag = _flag(lexer, lexer.next(), shown, since=since)
            options: dict[str, str] = {}
            token = lexer.next()
            while not (token.kind == PUNCT and token.text == ";"):
                if token.kind not in (WORD, QUOTED):
                    raise lexer.error(f"expected an option name or ';' ending the options of {shown}, found {describe(token, eof)}", token.pos, since=since)
                name_token = token
                token = lexer.next()
                if not (token.kind == PUNCT and token.text == "="):
                    raise lexer.error(f"expected '=' after an option name of {shown}, found {describe(token, eof)}", token.pos, since=since)
                token = lexer.next()
                if token.kind not in (WORD, QUOTED):
                    raise lexer.error(f"expected a value for option {shown_name(name_token.text)} of {shown}, found {describe(token, eof)}", token.pos, since=since)
                expanded = expand_system_properties(token.text, properties) if token.text else token.text
                if expanded is None:
                    raise lexer.error(f"option {shown_name(name_token.text)} of {shown} names a Java system property that is not set", token.pos, since=since)
                if token.text and expanded == "":
                    raise lexer.error(f"option {shown_name(name_token.text)} of {shown} expands to an empty value", token.pos, since=since)
                options[name_token.text] = expanded
                token = lexer.next()
            modules.append(LoginModule(module, flag, options, module_line))
            token = lexer.next()
        token = lexer.next()
        if not (token.kind == PUNCT and token.text == ";"):
            raise lexer.error(f"expected ';' after the '}}' that closes the entry, found {describe(token, eof)}", token.pos)
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
    check_size(text, source=key, key=key)
    lexer = Lexer(text, file=False, source=key, key=key)
    eof = "the end of the value"
    modules: list[LoginModule] = []
    token = lexer.next()
    while token.kind != EOF:
        since = token.pos
        if token.kind not in (WORD, QUOTED):
            raise lexer.error(f"expected a login module class name, found {describe(token, eof)}", token.pos, since=since)
        module, module_line = token.text, lexer.where(token.pos)[0]
        shown = shown_name(module)
        token = lexer.next()
        if token.kind == EOF:
            raise lexer.error(f"no control flag after {shown} (required, requisite, sufficient or optional)", token.pos, since=since)
        flag = _flag(lexer, token, shown, since=since)
        options: dict[str, str] = {}
        token = lexer.next()
        while token.kind != EOF and not (token.kind == PUNCT and token.text == ";"):
            if token.kind not in (WORD, QUOTED):
                raise lexer.error(f"expected an option name or ';' ending the options of {shown}, found {describe(token, eof)}", token.pos, since=since)
            name = token.text
            token = lexer.next()
            if not (token.kind == PUNCT and token.text == "="):
                raise lexer.error(f"expected '=' after an option name of {shown}, found {describe(token, eof)}", token.pos, since=since)
            token = lexer.next()
            if token.kind not in (WORD, QUOTED):
                raise lexer.error(f"no value for option {shown_name(name)} of {shown}, found {describe(token, eof)}", token.pos, since=since)
            options[name] = token.text
            token = lexer.next()
        if token.kind == EOF:
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
