"""Principal serde exactly as Kafka's DefaultKafkaPrincipalBuilder writes it."""

import functools
import io
import struct
from dataclasses import dataclass

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_writer

from envelope.errors import ProtocolError
from envelope.java_types import SHORT_MAX, to_int

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


class _JavaReader:
    """Reads as Kafka's ByteBufferAccessor: varints wrap to a signed 32-bit int, strings decode as `new String(bytes,
    UTF_8)` (a malformed byte becomes U+FFFD, never an error), and running past the end is an error."""

    def __init__(self, data: bytes, position: int) -> None:
        self.data = data
        self.position = position

    def byte(self) -> int:
        if self.position >= len(self.data):
            raise ProtocolError("principal data ends early")
        value = self.data[self.position]
        self.position += 1
        return value

    def uvarint(self) -> int:
        """ByteUtils.readUnsignedVarint: at most 5 bytes, the 5th shifted into (and past) the sign bit."""
        value = 0
        for index in range(5):
            byte = self.byte()
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return to_int(value)
        raise ProtocolError("varint is longer than 5 bytes")

    def array(self, size: int) -> bytes:
        if size < 0 or size > len(self.data) - self.position:
            raise ProtocolError(f"principal data: {size} bytes asked, {len(self.data) - self.position} left")
        value = self.data[self.position : self.position + size]
        self.position += size
        return value

    def string(self, field: str) -> str:
        length = to_int(self.uvarint() - 1)
        if length < 0:
            raise ProtocolError(f"non-nullable field {field} was serialized as null")
        if length > SHORT_MAX:
            raise ProtocolError(f"string field {field} had invalid length {length}")
        return self.array(length).decode("utf-8", "replace")



def deserialize_principal(data: bytes) -> Principal:
    """DefaultKafkaPrincipalBuilder.deserialize, as lenient and as strict as Kafka's: what it refuses raises ProtocolError
    (the controller answers PRINCIPAL_DESERIALIZATION_FAILURE, 97): an unknown version, a null or overlong (> 32767 bytes)
    string, a tagged field or anything else running past the end. What it accepts is accepted: bytes after the
    principal, unknown tagged fields, any non-zero TokenAuthenticated byte as true, malformed UTF-8 (U+FFFD)."""
    if len(data) < _VERSION.size:
        raise ProtocolError("principal data shorter than its version")
    (version,) = _VERSION.unpack_from(data)
    if version != PRINCIPAL_DATA_VERSION:
        raise ProtocolError(f"unknown principal data version {version}")
    reader = _JavaReader(data, _VERSION.size)
    kind = reader.string("type")
    name = reader.string("name")
    token_authenticated = reader.byte() != 0
    for _ in range(reader.uvarint()):  # a count that wraps negative reads no tagged field, as Kafka's loop
        reader.uvarint()  # the tag: DefaultPrincipalData v0 knows none
        reader.array(reader.uvarint())
    return Principal(kind, name, token_authenticated)
