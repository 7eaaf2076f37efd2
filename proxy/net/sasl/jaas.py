"""The part of JAAS configuration Kafka's PLAIN login module uses."""

import re
from dataclasses import dataclass, field

from proxy.properties import ConfigError

_ENTRY = re.compile(
    r"""\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<options>.*?);\s*$""",
    re.DOTALL,
)
_OPTION = re.compile(r"""\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))""")

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class JaasEntry:
    module: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def users(self) -> dict[str, str]:
        """`user_<name>="<password>"` entries of a server-side PLAIN config."""
        return {k[len("user_") :]: v for k, v in self.options.items() if k.startswith("user_")}


def parse_jaas(key: str, text: str) -> JaasEntry:
    match = _ENTRY.match(text)
    if match is None:
        raise ConfigError(key, "[hidden]", "JAAS config must be '<LoginModule> required <key>=\"<value>\" ... ;'")
    options: dict[str, str] = {}
    rest = match.group("options")
    position = 0
    while position < len(rest):
        if rest[position:].strip() == "":
            break
        option = _OPTION.match(rest, position)
        if option is None:
            raise ConfigError(key, "[hidden]", f"cannot parse JAAS options near {rest[position : position + 20]!r}")
        value = option.group(2) if option.group(2) is not None else option.group(3)
        options[option.group(1)] = re.sub(r"\\(.)", r"\1", value)
        position = option.end()
    return JaasEntry(match.group("module"), options)
