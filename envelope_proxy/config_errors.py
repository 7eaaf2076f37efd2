"""Configuration errors told in the operator's terms: the key to fix, and the listener it is missing for.

The parsers raise `ConfigError` naming the key they checked. Two cases name the wrong one for an operator:

* a key a listener reads as `listener.name.<l>.<key>`, falling back to `<key>`, that is missing: the parser names
  the global key (`ssl.keystore.location`), not the listener, nor the listener's own key. The keys the parse looked
  up (`proxy.properties.recording_reads`) say which listener it was reading;
* a listener name that `listener.security.protocol.map` does not map: the parser blames the map, where the fix is
  usually a typo in `listeners` (or in `controller.listener.names`).
"""

import difflib
from collections.abc import Mapping, Sequence

from proxy.properties import ConfigError

_LISTENER_PREFIX = "listener.name."
_MAP_KEY = "listener.security.protocol.map"
_DEFAULT_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_NO_PROTOCOL = "no security protocol defined for listener "
_NO_CONTROLLER_PROTOCOL = "no security protocol defined for controller listener "


class ListenerKeyMissing(ConfigError):
    """A listener's key that is set neither under the listener's prefix nor globally."""

    def __init__(self, cause: ConfigError, listener: str, protocol: str | None, tried: Sequence[str]) -> None:
        super().__init__(tried[0], cause.value, cause.reason)
        self.listener = listener
        alternatives = f" (or {', or '.join(tried[1:])})" if len(tried) > 1 else ""
        kind = f" ({protocol})" if protocol else ""
        self.args = (f"{tried[0]}{alternatives} is missing for listener {listener}{kind}: {cause.reason}",)


def _protocol_map(raw: Mapping[str, str]) -> dict[str, str]:
    text = (raw.get(_MAP_KEY) or "").strip() or _DEFAULT_MAP
    mapping: dict[str, str] = {}
    for item in text.split(","):
        name, sep, protocol = item.strip().partition(":")
        if sep and name.strip():
            mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def _listener_names(raw: Mapping[str, str]) -> list[str]:
    names = []
    for item in (raw.get("listeners") or "").split(","):
        name, sep, _ = item.strip().partition("://")
        if sep and name.strip():
            names.append(name.strip().upper())
    return names


def _missing(exc: ConfigError) -> bool:
    return exc.value is None  # how the parsers report a key that is not set


def _scoped_reads(exc: ConfigError, reads: Sequence[str]) -> tuple[str, list[str]] | None:
    """The listener whose keys the parse read last for `exc.key`, and the keys it tried, most specific first."""
    base = exc.key
    if base.startswith(_LISTENER_PREFIX):
        listener, _, rest = base[len(_LISTENER_PREFIX) :].partition(".")
        # only the ssl.* keys fall back to the global key here (a listener with ssl keys of its own is named so)
        return (listener, [base, rest]) if rest.startswith("ssl.") else None
    suffix = "." + base
    for index in range(len(reads) - 1, -1, -1):
        key = reads[index]
        if key.startswith(_LISTENER_PREFIX) and key.endswith(suffix):
            start = index  # the lookup's first try: listener.name.<l>.<mechanism>.<key> before listener.name.<l>.<key>
            while start > 0 and reads[start - 1].startswith(_LISTENER_PREFIX) and reads[start - 1].endswith(suffix):
                start -= 1
            tried = list(dict.fromkeys(reads[start : index + 1]))
            listener = key[len(_LISTENER_PREFIX) :].partition(".")[0]
            return listener, [*tried, base]
    return None


def _listener_key_missing(exc: ConfigError, raw: Mapping[str, str], reads: Sequence[str]) -> ConfigError | None:
    if not _missing(exc) or not exc.key:
        return None
    found = _scoped_reads(exc, reads)
    if found is None:
        return None
    listener, tried = found
    name = listener.upper()
    protocol = _protocol_map(raw).get(name)
    return ListenerKeyMissing(exc, name, protocol, tried)


def _close(name: str, names: Sequence[str]) -> str | None:
    near = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return near[0] if near else None


def _unmapped_listener(exc: ConfigError, raw: Mapping[str, str]) -> ConfigError | None:
    if exc.key != _MAP_KEY:
        return None
    mapping = _protocol_map(raw)
    if exc.reason.startswith(_NO_PROTOCOL):
        name = exc.reason[len(_NO_PROTOCOL) :].strip()
        listeners = raw.get("listeners")
        spare = [mapped for mapped in mapping if mapped not in _listener_names(raw)]
        near = _close(name, spare)
        if near is not None:
            return ConfigError("listeners", listeners, f"listener {name} is not in {_MAP_KEY} ({', '.join(mapping)}); did you mean {near}?")
        return ConfigError(
            "listeners", listeners, f"listener {name} has no security protocol: add {name}:<protocol> to {_MAP_KEY} ({', '.join(mapping)})"
        )
    if exc.reason.startswith(_NO_CONTROLLER_PROTOCOL):
        name = exc.reason[len(_NO_CONTROLLER_PROTOCOL) :].strip()
        near = _close(name, [mapped for mapped in mapping if mapped not in _listener_names(raw)])
        if near is not None:
            return ConfigError(
                "controller.listener.names",
                raw.get("controller.listener.names"),
                f"controller listener {name} is not in {_MAP_KEY} ({', '.join(mapping)}); did you mean {near}?",
            )
    return None


def explain(exc: ConfigError, raw: Mapping[str, str], reads: Sequence[str]) -> ConfigError:
    """`exc` as the operator should read it: naming the key to fix and the listener; `exc` itself otherwise."""
    return _unmapped_listener(exc, raw) or _listener_key_missing(exc, raw, reads) or exc
