"""Principal serde exactly as Kafka's DefaultKafkaPrincipalBuilder writes it."""

import functools
import io
import struct
from dataclasses import dataclass

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_writer

from envelope.codec import decode_entity
from envelope.errors import ProtocolError

_VERSION = struct.Struct(">h")
PRINCIPAL_DATA_VERSION = 0


@dataclass(frozen=True, slots=True)
class Principal:
    type: str
    name: str
    token_authenticated: bool = False

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "Principal":
        """`User:alice` -> Principal("User", "alice"); the type is required."""
        # Kafka's SecurityUtils.parseKafkaPrincipal wording, so both upstreams say the same
        if not text:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"Could not parse principal from `{text}` (no colon is present separating the principal type from the principal name)")
        return cls(kind, name)


ANONYMOUS = Principal("User", "ANONYMOUS")


@functools.lru_cache(maxsize=1024)
def serialize_principal(principal: Principal) -> bytes:
    """Kafka's DefaultPrincipalData, cached: a session forwards many requests as one principal
    (about 10 us a call uncached, a sixth of wrapping an Envelope)."""
    out = io.BytesIO()
    out.write(_VERSION.pack(PRINCIPAL_DATA_VERSION))
    entity_writer(DefaultPrincipalData)(
        out,
        DefaultPrincipalData(
            type_=principal.type,
            name=principal.name,
            token_authenticated=principal.token_authenticated,
        ),
    )
    return out.getvalue()


def deserialize_principal(data: bytes) -> Principal:
    """Raises ProtocolError for an unknown version, garbage or trailing bytes (Kafka: 97)."""
    if len(data) < _VERSION.size:
        raise ProtocolError("principal data shorter than its version")
    (version,) = _VERSION.unpack_from(data)
    if version != PRINCIPAL_DATA_VERSION:
        raise ProtocolError(f"unknown principal data version {version}")
    try:
        value, size = decode_entity(DefaultPrincipalData, data, _VERSION.size)
    except ProtocolError as exc:
        raise ProtocolError(f"malformed principal data: {exc}") from exc
    if _VERSION.size + size != len(data):
        raise ProtocolError("trailing bytes after principal data")
    return Principal(value.type_, value.name, value.token_authenticated)
