"""How much a forwarded request's intent keeps: `audit.level` and its overrides."""

from dataclasses import dataclass, field

# How much a forwarded request's intent keeps (audit.level), as a Kubernetes audit policy's levels: `metadata` is
# who, what API and which resources; `request` adds what the request asks to change (`data.request`).
METADATA = "metadata"
REQUEST = "request"
LEVELS = (METADATA, REQUEST)
DEFAULT_LEVEL = REQUEST


@dataclass(frozen=True)
class AuditLevels:
    """`audit.level` and its overrides, the most specific first: `listener.name.<l>.audit.level.api.<ApiName>`,
    `audit.level.api.<ApiName>`, `listener.name.<l>.audit.level`, `audit.level` (proxy/audit/settings.py parses them
    and prints them for check-config)."""

    default: str = DEFAULT_LEVEL
    listeners: dict[str, str] = field(default_factory=dict)
    """By listener name (upper case)."""
    apis: dict[str, str] = field(default_factory=dict)
    """By API name (CreateAcls)."""
    listener_apis: dict[tuple[str, str], str] = field(default_factory=dict)
    """By (listener, API)."""
    _decided: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)

    def level(self, listener: str, api: str) -> str:
        name = listener.upper()
        return self.listener_apis.get((name, api)) or self.apis.get(api) or self.listeners.get(name) or self.default

    def keeps_request(self, listener: str, api: str) -> bool:
        """Whether an intent on `listener` of `api` carries the request's parameters (decided once per pair)."""
        decided = self._decided.get((listener, api))
        if decided is None:
            decided = self._decided[(listener, api)] = self.level(listener, api) == REQUEST
        return decided


