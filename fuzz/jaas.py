"""The JAAS parsers under the fuzzer: family `jaas` of `python -m fuzz.run` (registered in fuzz.targets).

Three targets, each fed realistic text (Kafka broker JAAS files, `sasl.jaas.config`
values, `KAFKA_OPTS` lines) broken on purpose where a tokenizer is most likely to
trust it: quotes, escapes, comment openers, braces, `${` expansions, line breaks,
NULs, a byte-order mark, non-UTF-8 bytes. A target either accepts the text or
refuses it with a JaasError (reported to the runner as a ProtocolError); any other
exception is a finding, and so is an accepted text whose rendering does not
parse back to the same login modules.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass

from envelope.errors import ProtocolError
from fuzz.generate import FIXED, Generated, Site
from fuzz.jaas_render import render_jaas_config, render_jaas_file
from fuzz.target import Target
from proxy.net.sasl.jaas import GSSAPI_LOGIN_MODULES, OAUTHBEARER_LOGIN_MODULE, PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, select_login
from proxy.net.sasl.jaas_model import JaasError
from proxy.net.sasl.jaas_parser import parse_jaas_config, parse_jaas_file
from proxy.net.sasl.system_properties import jaas_file_location, java_system_properties

_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
_LISTENERS = ("CLIENT", "SASL_SSL", "EXTERNAL")
_SYSTEM_PROPERTIES = {"user.home": "/home/kafka", "kafka.dir": "/etc/kafka", "empty": ""}
_MODULES = (PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, OAUTHBEARER_LOGIN_MODULE, *GSSAPI_LOGIN_MODULES, "com.example.Custom$Module")
_FLAGS = ("required", "REQUIRED", "Requisite", "sufficient", "optional")
_OPTIONS = (
    ("username", '"admin"'),
    ("password", '"admin-secret"'),
    ("user_alice", '"alice // not a comment \\" quoted"'),
    ("user_bob", "bob-secret"),
    ("useKeyTab", "true"),
    ("storeKey", "true"),
    ("keyTab", '"${user.home}/kafka.keytab"'),
    ("principal", '"kafka/broker1.example.com@EXAMPLE.COM"'),
    ("clientId", '"proxy"'),
    ("clientSecret", '"s3cr\\145t"'),
    ("scope", '"kafka admin"'),
    ("unsecuredLoginStringClaim_sub", '"admin"'),
    ("debug", "false"),
)
_COMMENTS = ("// a line comment\n", "/* a block\n   comment */", "/**/", "/* // */")
# What a tokenizer is most likely to trust: each spliced in at a random place.
_HOSTILE = (
    '"', "'", "\\", "/", "//", "/*", "*/", "{", "}", ";", "=", "${", "${user.home}", "${nope}", "${{x}}", "${/}",
    "\\377", "\\8", "\n", "\r", "\r\n", "\x00", "\ufeff", "-1", ".5", "0x", "\u00e9", "\U0001f600", "\x85", "\ud800",
    "KafkaServer {", "};", "required", " = ", '""', "''", "\t",
)  # fmt: skip


def _module(rng: random.Random, *, file: bool) -> str:
    options = rng.sample(_OPTIONS, rng.randrange(0, 5))
    if not file:
        options = [(name, value) for name, value in options if "${" not in value]
    separator = "\n        " if file else " "
    rendered = "".join(f"{separator}{name}={value}" for name, value in options)
    return f"{rng.choice(_MODULES)} {rng.choice(_FLAGS)}{rendered};"


def _file_text(rng: random.Random) -> str:
    blocks = []
    for _ in range(rng.randrange(1, 4)):
        name = rng.choice(("KafkaServer", "client.KafkaServer", "sasl_ssl.KafkaServer", "KafkaClient", '"Quoted.KafkaServer"'))
        modules = "".join(f"\n    {_module(rng, file=True)}" for _ in range(rng.randrange(0, 3)))
        comment = rng.choice(("", *_COMMENTS))
        blocks.append(f"{comment}{name} {{{modules}\n}};\n")
    return "".join(blocks)


def _property_text(rng: random.Random) -> str:
    return " ".join(_module(rng, file=False) for _ in range(rng.choice((1, 1, 1, 2))))


def _kafka_opts_text(rng: random.Random) -> str:
    words = ["-Xmx1g", "-Dkafka.dir=/etc/kafka", "-XX:+UseG1GC"]
    path = rng.choice(("/etc/kafka/jaas.conf", "'/etc/kafka/my jaas.conf'", "=/etc/kafka/only.conf", "file:///etc/kafka/a%20b.conf", "${kafka.dir}/j.conf"))
    words.insert(rng.randrange(len(words) + 1), f"-Djava.security.auth.login.config={path}")
    return " ".join(words)


def _break(text: str, rng: random.Random) -> bytes:
    """Zero to three text mutations, then sometimes a byte-level one (invalid UTF-8)."""
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        position = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.5:
            text = text[:position] + rng.choice(_HOSTILE) + text[position:]
        elif roll < 0.7:
            text = text[:position] + text[position + rng.randrange(1, 8) :]
        elif roll < 0.85:
            end = min(len(text), position + rng.randrange(1, 40))
            text = text[:position] + text[position:end] * rng.choice((2, 3, 50)) + text[end:]
        else:
            text = text[:position]
    data = text.encode("utf-8", "surrogatepass")
    if data and rng.random() < 0.05:
        position = rng.randrange(len(data))
        data = data[:position] + bytes([rng.choice((0x80, 0xC3, 0xFF, 0xFE))]) + data[position + 1 :]
    return data


def _refusal(exc: JaasError) -> ProtocolError:
    return ProtocolError(str(exc))


def decode_file(data: bytes) -> None:
    """What the proxy does with a JAAS file: parse it, look up every listener and mechanism, render it back."""
    try:
        parsed = parse_jaas_file(data.decode("utf-8", "replace"), source="fuzz.conf", system_properties=_SYSTEM_PROPERTIES)
    except JaasError as exc:
        raise _refusal(exc) from None
    for listener in _LISTENERS:
        for mechanism in _MECHANISMS:
            try:
                login = select_login({}, listener, mechanism, parsed)
            except JaasError:
                continue
            _ = (login.module, login.users, login.option("username"))
    contexts = list(parsed.contexts.values())
    try:
        rendered = render_jaas_file(contexts)
    except ValueError:
        return  # a name or value the file form cannot write back (e.g. a quoted entry name with a space)
    again = parse_jaas_file(rendered, source="rendered")
    if list(again.contexts.values()) != contexts:
        raise AssertionError("a rendered JAAS file does not parse back to the same entries")


def decode_property(data: bytes) -> None:
    """What the proxy does with a `sasl.jaas.config` value: parse it, select it for a listener, render it back."""
    text = data.decode("utf-8", "replace")
    key = "listener.name.client.plain.sasl.jaas.config"
    try:
        modules = parse_jaas_config(text, key=key)
        select_login({key: text}, "CLIENT", "PLAIN")
    except JaasError as exc:
        raise _refusal(exc) from None
    try:
        rendered = render_jaas_config(modules)
    except ValueError:
        return
    if parse_jaas_config(rendered, key=key) != modules:
        raise AssertionError("a rendered sasl.jaas.config does not parse back to the same login modules")


def decode_kafka_opts(data: bytes) -> None:
    """Where the proxy finds the JAAS file: KAFKA_OPTS split like a shell line, -D options, URLs, expansion."""
    environ = {"KAFKA_OPTS": data.decode("utf-8", "replace"), "HOME": "/home/kafka"}
    try:
        jaas_file_location({}, environ)
        java_system_properties(environ)
    except JaasError as exc:
        raise _refusal(exc) from None


@dataclass(frozen=True, slots=True)
class TextTarget(Target):
    """A target whose valid input is generated text rather than a Kafka message body."""

    text: Callable[[random.Random], str] = _file_text

    def valid(self, rng: random.Random) -> tuple[bytes, Generated]:
        data = _break(self.text(rng), rng)
        # Spans the runner's mutator may overwrite with 0xff, 0x80, 0x7f or 0x02: bytes no JAAS text should hold.
        sites = [Site(FIXED, start, min(len(data), start + rng.choice((1, 2))), False) for start in rng.sample(range(len(data)), min(3, len(data)))]
        return b"", Generated(bytearray(data), sites)


def targets() -> list[Target]:
    return [
        TextTarget("jaas file", str, b"", decode_file, _file_text),
        TextTarget("jaas property", str, b"", decode_property, _property_text),
        TextTarget("jaas kafka-opts", str, b"", decode_kafka_opts, _kafka_opts_text),
    ]
