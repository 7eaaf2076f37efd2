"""Kerberos principal names and `sasl.kerberos.principal.to.local.rules`, read and applied as Kafka does (no I/O).

Kafka's KerberosName, KerberosShortNamer and KerberosRule: a name is `primary[/instance]@REALM`;
each rule is `DEFAULT` or `RULE:[n:format](match)s/from/to/g` with an optional `/L` (lower
case) or `/U` (upper case) flag. A rule applies to names of exactly `n` components: `format`
builds a string from `$0` (the realm), `$1`, `$2` (the components), which must fully match
`match`; the sed-like substitution then replaces the first (`g`: every) match of `from` by
`to`. The first rule that applies gives the short name; a short name with `/` or `@` in it is
an error, and so is a name no rule applies to. `DEFAULT` gives the first component of a name
in the default realm.

The regular expressions are Python's (`re`), which read the Java patterns rules are written in
the same way for the constructs rules use (classes, groups, anchors, quantifiers); `to` is a
Java replacement string (`$1` a group, `\\$` a literal dollar), expanded as Java's Matcher does.
"""

import re
from dataclasses import dataclass

RULES_KEY = "sasl.kerberos.principal.to.local.rules"

_NAME = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_RULE = re.compile(r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))")
_PARAMETER = re.compile(r"([^$]*)(\$(\d*))?")
_NON_SIMPLE = re.compile(r"[/@]")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


class NoMatchingRule(Exception):
    """No rule gives a short name for a principal, or the one that applies gives a name that is not simple."""


class BadFormatString(NoMatchingRule):
    """A rule's format refers to a component the name does not have, or is malformed (`$` without a number)."""


@dataclass(frozen=True)
class KerberosName:
    primary: str
    instance: str | None
    realm: str | None

    @classmethod
    def parse(cls, text: str) -> "KerberosName":
        """`primary[/instance]@REALM`; a name without `@` is simple (no realm). ValueError for a malformed one."""
        match = _NAME.fullmatch(text)
        if match is None:
            if "@" in text:
                raise ValueError(f"Malformed Kerberos name: {text}")
            return cls(text, None, None)
        return cls(match.group(1), match.group(3), match.group(4))

    def __str__(self) -> str:
        instance = f"/{self.instance}" if self.instance is not None else ""
        realm = f"@{self.realm}" if self.realm is not None else ""
        return f"{self.primary}{instance}{realm}"


def _java_replacement(template: str, match: re.Match[str]) -> str:
    """`template` expanded for `match` as java.util.regex.Matcher.appendReplacement does."""
    out: list[str] = []
    groups = match.re.groups
    i = 0
    while i < len(template):
        char = template[i]
        if char == "\\":
            i += 1
            if i >= len(template):
                raise BadFormatString("character to be escaped is missing")
            out.append(template[i])
            i += 1
        elif char == "$":
            i += 1
            if i >= len(template):
                raise BadFormatString("Illegal group reference: group index is missing")
            if template[i] == "{":
                end = template.find("}", i)
                name = template[i + 1 : end] if end > 0 else ""
                if end < 0 or not name or name not in match.re.groupindex:
                    raise BadFormatString(f"No group with name {{{name}}}")
                out.append(match.group(name) or "")
                i = end + 1
                continue
            if not template[i].isdigit():
                raise BadFormatString("Illegal group reference")
            number = int(template[i])
            if number > groups:
                raise BadFormatString(f"No group {number}")
            i += 1
            while i < len(template) and template[i].isdigit() and number * 10 + int(template[i]) <= groups:
                number = number * 10 + int(template[i])
                i += 1
            out.append(match.group(number) or "")
        else:
            out.append(char)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class KerberosRule:
    default_realm: str
    is_default: bool = False
    components: int = 0
    format: str = ""
    match: re.Pattern[str] | None = None
    from_pattern: re.Pattern[str] | None = None
    to_pattern: str = ""
    repeat: bool = False
    case: str | None = None
    """"L" (lower case the result), "U" (upper case it) or None."""

    def __str__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        text = f"RULE:[{self.components}:{self.format}]"
        if self.match is not None:
            text += f"({self.match.pattern})"
        if self.from_pattern is not None:
            text += f"s/{self.from_pattern.pattern}/{self.to_pattern}/" + ("g" if self.repeat else "")
        if self.case is not None:
            text += f"/{self.case}"
        return text

    def _format(self, params: list[str]) -> str:
        out: list[str] = []
        start = 0
        while start < len(self.format):
            found = _PARAMETER.match(self.format, start)
            assert found is not None  # the pattern matches the empty string
            out.append(found.group(1))
            number = found.group(3)
            if number is not None:
                if not number:
                    raise BadFormatString(f"bad format in username mapping in {number}")
                index = int(number)
                if index >= len(params):
                    raise BadFormatString(f"index {index} from {self.format} is outside of the valid range 0 to {len(params) - 1}")
                out.append(params[index])
            if found.end() == start:
                break
            start = found.end()
        return "".join(out)

    def apply(self, params: list[str]) -> str | None:
        """The short name for `params` ([realm, component, ...]), or None when this rule does not apply."""
        result: str | None = None
        if self.is_default:
            if params[0] == self.default_realm:
                result = params[1]
        elif len(params) - 1 == self.components:
            base = self._format(params)
            if self.match is None or self.match.fullmatch(base):
                if self.from_pattern is None:
                    result = base
                else:
                    count = 0 if self.repeat else 1
                    result = self.from_pattern.sub(lambda m: _java_replacement(self.to_pattern, m), base, count=count)
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self}")
        if result is not None and self.case == "L":
            result = result.lower()
        elif result is not None and self.case == "U":
            result = result.upper()
        return result


def _compile(pattern: str, rule: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"Invalid rule: `{rule}`: bad regular expression {pattern!r}: {exc}") from None


def parse_rule(rule: str, default_realm: str) -> KerberosRule:
    """One rule; ValueError says why it is invalid (Kafka's message)."""
    found = _RULE.match(rule)
    if found is None:
        raise ValueError(f"Invalid rule: {rule}")
    if found.end() != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[found.end():]}`")
    if found.group(2) is not None:
        return KerberosRule(default_realm, is_default=True)
    if not found.group(5):
        raise ValueError(f"Invalid rule: `{rule}`: the number of components is missing")
    return KerberosRule(
        default_realm,
        components=int(found.group(5)),
        format=found.group(6),
        match=_compile(found.group(8), rule) if found.group(8) is not None else None,
        from_pattern=_compile(found.group(10), rule) if found.group(10) is not None else None,
        to_pattern=found.group(11) or "",
        repeat=found.group(12) == "g",
        case=found.group(13),
    )


def split_rules(text: str | None) -> list[str] | None:
    """The value of the list-typed key as Kafka splits it (commas, with the blanks around them); None when not set."""
    if text is None:
        return None
    trimmed = text.strip()
    return _LIST_SEPARATOR.split(trimmed) if trimmed else []


@dataclass(frozen=True)
class KerberosShortNamer:
    rules: tuple[KerberosRule, ...]

    @classmethod
    def from_rules(cls, rules: list[str] | None, default_realm: str) -> "KerberosShortNamer":
        """`rules` as written (None: the default, `DEFAULT` alone); ValueError names the bad rule."""
        texts = ["DEFAULT"] if rules is None else rules
        return cls(tuple(parse_rule(text, default_realm) for text in texts))

    def short_name(self, name: KerberosName) -> str:
        """The local name of `name`, or NoMatchingRule (also for a rule whose format or replacement is bad)."""
        if name.instance is None:
            if name.realm is None:
                return name.primary
            params = [name.realm, name.primary]
        else:
            params = [name.realm or "", name.primary, name.instance]
        for rule in self.rules:
            result = rule.apply(params)
            if result is not None:
                return result
        rules = ", ".join(str(rule) for rule in self.rules)
        raise NoMatchingRule(f"No rules apply to {name}, rules [{rules}]")

    def __str__(self) -> str:
        return ", ".join(str(rule) for rule in self.rules)


__all__ = [
    "RULES_KEY",
    "BadFormatString",
    "KerberosName",
    "KerberosRule",
    "KerberosShortNamer",
    "NoMatchingRule",
    "parse_rule",
    "split_rules",
]
