"""Kafka's Uuid in its text form: what `kafka-storage random-uuid` prints and a cluster id is.

Kafka writes a Uuid as the URL-safe base64 of its 16 bytes without padding (22 characters), and
its generator never hands out the zero id, the metadata topic's id (1), or a text that starts
with '-' (a command-line tool would read it as an option).
"""

import base64
import binascii
import secrets
import uuid

TEXT_LENGTH = 22
_RESERVED = (uuid.UUID(int=0), uuid.UUID(int=1))


def to_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def random_text() -> str:
    """A new id as Kafka's storage tool makes one."""
    while True:
        value = uuid.UUID(bytes=secrets.token_bytes(16))
        text = to_text(value)
        if value not in _RESERVED and not text.startswith("-"):
            return text


def parse_problem(text: str) -> str | None:
    """Why `text` is not a Kafka Uuid as Kafka's Uuid.fromString reads it, or None when it is one."""
    if len(text) != TEXT_LENGTH:
        return f"a Kafka Uuid is {TEXT_LENGTH} characters of URL-safe base64 (kafka-storage random-uuid), not {len(text)}"
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        return "not URL-safe base64 (kafka-storage random-uuid makes one)"
    if len(raw) != 16 or to_text(uuid.UUID(bytes=raw)) != text:
        return "not URL-safe base64 of 16 bytes (kafka-storage random-uuid makes one)"
    return None


__all__ = ["TEXT_LENGTH", "parse_problem", "random_text", "to_text"]
