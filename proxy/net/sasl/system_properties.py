"""The Java system properties a Kafka broker's JVM would see, read from `KAFKA_OPTS`: the `-Dname=value` options,
their `${name}` expansion (the JDK's PropertyExpander), and the JAAS file `-Djava.security.auth.login.config` names.

The file's name (`jaas_file_location`): the proxy's key `jaas.config.file`
(Kafka has no server key for it), else `-Djava.security.auth.login.config=` in
`KAFKA_OPTS`, split like a shell command line. The key wins over `KAFKA_OPTS`.

Pure: reads the environment it is given, no file.
"""

from __future__ import annotations

import re
import shlex
import urllib.parse
from collections.abc import Mapping

from proxy.net.sasl.jaas_model import JaasError

__all__ = ["JAAS_FILE_KEY", "JAAS_FILE_SYSTEM_PROPERTY", "KAFKA_OPTS", "expand_system_properties", "jaas_file_location", "java_system_properties"]

JAAS_FILE_KEY = "jaas.config.file"
"""The proxy's configuration key naming a JAAS file; it wins over KAFKA_OPTS."""
JAAS_FILE_SYSTEM_PROPERTY = "java.security.auth.login.config"
KAFKA_OPTS = "KAFKA_OPTS"


def expand_system_properties(value: str, properties: Mapping[str, str]) -> str | None:
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
    expanded = expand_system_properties(value, java_system_properties(environ))
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
