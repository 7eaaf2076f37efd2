"""Accept-time decision for a new connection: the IP filter first, then the connection limits.

Nothing of the peer's bytes is needed, so a refused connection is closed before
anything is read from it.
"""

from dataclasses import dataclass

from proxy.net.limits import MAX_CONNECTIONS, ConnectionTracker
from proxy.net.refusals import IP_FILTER
from proxy.net.settings import ListenerConfig


@dataclass(frozen=True)
class Refusal:
    reason: str  # IP_FILTER or the limit's base key
    detail: str


def ip_filter_refusal(listener: ListenerConfig, host: str) -> Refusal | None:
    ip_filter = listener.ip_filter
    if ip_filter is None or ip_filter.allows(host):
        return None
    if ip_filter.rule_type == "deny":
        return Refusal(IP_FILTER, f"deny rule {ip_filter.matching_rule(host)} of {listener.ip_filter_key}")
    return Refusal(IP_FILTER, f"allow rule type: no range of {listener.ip_filter_key} contains {host}")


def admit(listener: ListenerConfig, tracker: ConnectionTracker, host: str) -> Refusal | None:
    """None when the connection may proceed; it is then counted until `tracker.release`."""
    refused = ip_filter_refusal(listener, host)
    if refused is not None:
        return refused
    over = tracker.try_acquire(listener.name, host, listener.limits)
    if over is None:
        return None
    # A per-listener max.connections is reported under the base key so that counts group by limit kind.
    reason = MAX_CONNECTIONS if over.limit_key.endswith(f".{MAX_CONNECTIONS}") else over.limit_key
    return Refusal(reason, over.reason)
