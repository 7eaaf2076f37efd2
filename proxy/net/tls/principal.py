"""Kafka's ``ssl.principal.mapping.rules``: SSL clients get the principal a Kafka broker would give them.

A TLS client's principal is derived the way a Kafka broker derives it:

1. the peer certificate's subject is rendered as ``X500Principal.getName()`` does
   (RFC 2253: last RDN first, Java's escaping) -- :func:`~proxy.net.tls.subject.distinguished_name`;
2. the rules are tried in order; ``DEFAULT`` yields the DN unchanged, a ``RULE``
   applies only if its (Java) pattern matches the *whole* DN, and then the pattern
   is replaced everywhere in the DN, optionally lower/upper-cased afterwards;
3. no rule applying means authentication fails (:class:`NoMatchingRule`).

The rule grammar, splitting, ``$n`` back-reference handling (including the way
Kafka turns references to non-existent groups into literal text) follow
``org.apache.kafka.common.security.ssl.SslPrincipalMapper``.

Deliberate differences from Kafka:

* An empty or whitespace-only value means ``DEFAULT`` (Kafka: only an *unset*
  value does; an explicitly empty value gives zero rules, so every certificate
  is rejected).
* A replacement that Java's ``Matcher`` would reject (``$`` at the end, a
  reference to a group the pattern does not have, a trailing ``\\``) is a
  configuration error at start-up.  Kafka accepts such a rule and then fails
  every authentication the rule matches.
* Patterns are Java regular expressions run on Python's ``re``: named groups,
  ``\\k<name>``, ``\\Q...\\E`` and ``\\z`` are translated, ``\\w \\d \\s \\b`` and
  ``(?i)`` are ASCII-only as in Java; Java-only syntax Python lacks (``\\p{..}``,
  nested classes, ``&&``, mid-pattern ``(?i)``) is a configuration error.
  Java's ``.`` and ``$`` also treat ``\\r``, U+0085, U+2028 and U+2029 as line
  terminators; here only ``\\n`` is one (matters only for DNs containing those).
  ``\\b`` is ASCII-based as in Java 19+ (Java 17's ``\\b`` also counts non-ASCII letters).
  Replacement runs Java's find loop, not ``re.sub``, so empty matches behave as in Java.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from cryptography import x509

from envelope.java_types import INT_MAX
from proxy.net.tls.subject import distinguished_name
from proxy.properties import ConfigError

__all__ = [
    "DEFAULT_RULES",
    "MappingRule",
    "NoMatchingRule",
    "PrincipalMapper",
    "parse_mapping_rules",
    "principal_for_peer",
]

DEFAULT_RULES = "DEFAULT"
ANONYMOUS = "ANONYMOUS"


class NoMatchingRule(Exception):
    """No mapping rule applies to a DN: the TLS client must not be authenticated."""


# --- rule parsing (Kafka's grammar, written for Python's engine) -------------------------

# Java's "." does not match line terminators; the rule grammar uses it, so spell it out.
_JDOT = r"[^\n\r\x85\u2028\u2029]"
# Java's "$" without MULTILINE: end of input, or just before a final line terminator.
_JEND = r"(?=\r\n\Z|(?<!\r)\n\Z|[\r\x85\u2028\u2029]\Z|\Z)"
# Groups: 1 DEFAULT, 2 pattern, 4 replacement, 6 case flag, 7 anything else (Kafka's numbering).
_RULE = rf"(DEFAULT)|RULE:((\\{_JDOT}|[^\\/])*)/((\\{_JDOT}|[^\\/])*)/([LU]?){_JDOT}*?|({_JDOT}*?)"
_RULE_PARSER = re.compile(_RULE, re.ASCII)
_RULE_SPLITTER = re.compile(rf"\s*({_RULE})\s*(,\s*|{_JEND})", re.ASCII)
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim() strips every char <= U+0020


def _java_find_all(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Matcher.find() in a loop: after an empty match the next search starts one further on."""
    matches = []
    pos = 0
    while pos <= len(text):
        m = pattern.search(text, pos)
        if m is None:
            break
        matches.append(m)
        pos = m.end() + 1 if m.end() == m.start() else m.end()
    return matches


@dataclass(frozen=True)
class MappingRule:
    """One parsed rule; ``pattern``/``replacement`` keep the Java text as configured."""

    is_default: bool
    pattern: str = ""
    replacement: str = ""
    to_lower: bool = False
    to_upper: bool = False
    _compiled: re.Pattern[str] | None = None
    _parts: tuple[str | int, ...] = ()

    def apply(self, dn: str) -> str | None:
        """The mapped name, or None if this rule does not apply to ``dn``."""
        if self.is_default:
            return dn
        assert self._compiled is not None
        if self._compiled.fullmatch(dn) is None:
            return None
        # String.replaceAll, not re.sub: after an empty match Java resumes one character later,
        # while Python may start a non-empty match at the same spot ("ab" with .*? -> "-a-b-").
        pieces: list[str] = []
        last = 0
        for m in _java_find_all(self._compiled, dn):
            pieces.append(dn[last : m.start()])
            pieces.extend(p if isinstance(p, str) else (m.group(p) or "") for p in self._parts)
            last = m.end()
        pieces.append(dn[last:])
        result = "".join(pieces)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result

    def __str__(self) -> str:  # Kafka's Rule.toString()
        if self.is_default:
            return "DEFAULT"
        text = f"RULE:{self.pattern}/{self.replacement}"
        if self.to_lower:
            text += "/L"
        elif self.to_upper:
            text += "/U"
        return text


class PrincipalMapper:
    """Maps an RFC 2253 DN to a principal name with Kafka's semantics."""

    def __init__(self, rules: tuple[MappingRule, ...]) -> None:
        self.rules = rules

    def map(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules [{', '.join(map(str, self.rules))}]")

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self.rules))}])"


def parse_mapping_rules(key: str, text: str | None) -> PrincipalMapper:
    """Parse ``ssl.principal.mapping.rules``; malformed rules raise :class:`ConfigError`."""
    if text is None or not text.strip():
        text = DEFAULT_RULES
    rules: list[MappingRule] = []
    for split in _java_find_all(_RULE_SPLITTER, text.strip(_JAVA_TRIM)):
        rule_text = split.group(1)
        m = _RULE_PARSER.match(rule_text)  # always matches: the last alternative may be empty
        assert m is not None
        if m.end() != len(rule_text):
            raise ConfigError(key, text, f"Invalid rule: `{rule_text}`, unmatched substring: `{rule_text[m.end() :]}`")
        if m.group(1) is not None:
            rules.append(MappingRule(is_default=True))
        elif m.group(2) is not None:
            rules.append(_make_rule(key, text, rule_text, m.group(2), m.group(4), m.group(6)))
        # else: an empty item (e.g. from ",,"), ignored as Kafka does
    return PrincipalMapper(tuple(rules))


def _make_rule(key: str, text: str, rule_text: str, pattern: str, replacement: str, case: str) -> MappingRule:
    try:
        compiled = _compile_java_pattern(pattern)
    except (re.error, ValueError, Warning) as e:
        raise ConfigError(key, text, f"rule `{rule_text}`: pattern `{pattern}` is not a usable regular expression: {e}") from None
    try:
        java_replacement = _kafka_escape_literal_back_references(replacement, compiled.groups)
        parts = _parse_java_replacement(java_replacement, compiled.groups, dict(compiled.groupindex))
    except ValueError as e:
        raise ConfigError(key, text, f"rule `{rule_text}`: replacement `{replacement}` is invalid: {e}") from None
    return MappingRule(False, pattern, replacement, case == "L", case == "U", compiled, parts)


# --- Java regex -> Python re --------------------------------------------------------------

_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_NAMED_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def _compile_java_pattern(pattern: str) -> re.Pattern[str]:
    """Translate the Java-only syntax that has a Python equivalent, reject the rest."""
    out: list[str] = []
    i = 0
    in_class = False
    class_start = -1
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("trailing backslash")
            nxt = pattern[i + 1]
            if nxt == "Q":  # \Q...\E quotes literally (also inside a class in Java)
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if nxt == "z" and not in_class:
                out.append(r"\Z")
                i += 2
                continue
            if nxt == "k" and not in_class:
                m = _NAMED_BACKREF.match(pattern, i)
                if m is None:
                    raise ValueError(r"\k is not followed by <name>")
                out.append(f"(?P={m.group(1)})")
                i = m.end()
                continue
            if nxt == "v":  # Java: vertical whitespace class; Python: the VT character
                raise ValueError(r"\v (Java's vertical whitespace class) is not supported")
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]" and i > class_start:
                in_class = False
            elif c == "[":
                raise ValueError("nested character classes are Java-only syntax")
            elif c == "&" and pattern.startswith("&&", i):
                raise ValueError("character class intersection (&&) is Java-only syntax")
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            # A "]" right after "[" or "[^" is a literal in Python's syntax.
            class_start = i + 2 if pattern.startswith("[^", i) else i + 1
            out.append(c)
            i += 1
            continue
        if c == "(":
            m = _NAMED_GROUP.match(pattern, i)
            if m is not None:
                out.append(f"(?P<{m.group(1)}>")
                i = m.end()
                continue
        out.append(c)
        i += 1
    with warnings.catch_warnings():
        # Python warns (FutureWarning) about set syntax it may change; Java means something else.
        warnings.simplefilter("error")
        return re.compile("".join(out), re.ASCII)


# --- replacement strings ------------------------------------------------------------------

_BACK_REFERENCE = re.compile(r"\$([0-9]+)")


def _kafka_escape_literal_back_references(unescaped: str, group_count: int) -> str:
    """Kafka's escapeLiteralBackReferences: ``$n`` naming a missing group becomes literal text.

    ``$123`` with 12 groups means group 12 followed by "3" (Java's own rule); with fewer than
    1 group it is escaped.  Offsets come from the original string while the copy grows, which
    is how Kafka does it (it misplaces the escape when several references need one).
    """
    if group_count == 0:
        return unescaped
    value = unescaped
    for m in _BACK_REFERENCE.finditer(unescaped):
        digits = m.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        if index > INT_MAX:
            raise ValueError(f'For input string: "{digits}"')  # Integer.parseInt overflow
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            group_start = m.start(1)
            value = value[: group_start - 1] + "\\" + value[group_start - 1 :]
    return value


def _parse_java_replacement(replacement: str, group_count: int, names: dict[str, int]) -> tuple[str | int, ...]:
    """Java's Matcher replacement syntax as literal text and group numbers; errors as Java words them."""
    parts: list[str | int] = []
    literal: list[str] = []
    i = 0
    n = len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            i += 1
            if i == n:
                raise ValueError("character to be escaped is missing")
            literal.append(replacement[i])
            i += 1
            continue
        if c != "$":
            literal.append(c)
            i += 1
            continue
        i += 1
        if i == n:
            raise ValueError("Illegal group reference: group index is missing")
        c = replacement[i]
        if c == "{":
            i += 1
            start = i
            while i < n and replacement[i].isascii() and replacement[i].isalnum():
                i += 1
            name = replacement[start:i]
            if not name:
                raise ValueError("named capturing group has 0 length name")
            if i == n or replacement[i] != "}":
                raise ValueError("named capturing group is missing trailing '}'")
            if name[0].isdigit():
                raise ValueError(f"capturing group name {{{name}}} starts with digit character")
            if name not in names:
                raise ValueError(f"No group with name {{{name}}}")
            ref = names[name]
            i += 1
        else:
            if not "0" <= c <= "9":
                raise ValueError("Illegal group reference")
            ref = ord(c) - ord("0")
            i += 1
            while i < n and "0" <= replacement[i] <= "9":  # the longest number that is still a group
                longer = ref * 10 + ord(replacement[i]) - ord("0")
                if longer > group_count:
                    break
                ref = longer
                i += 1
            if ref > group_count:
                raise ValueError(f"No group {ref}")
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(ref)
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def principal_for_peer(peer_cert_der: bytes | None, mapper: PrincipalMapper) -> str:
    """Principal name for a TLS peer: mapped subject DN, or ANONYMOUS without a verified cert.

    Raises :class:`NoMatchingRule` when no rule applies (authentication fails).
    """
    if not peer_cert_der:
        return ANONYMOUS
    return mapper.map(distinguished_name(x509.load_der_x509_certificate(peer_cert_der)))
