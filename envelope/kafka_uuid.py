"""Kafka's Uuid in its text form: what `kafka-storage random-uuid` prints and a cluster id is.

Kafka writes a Uuid as the URL-safe base64 of its 16 bytes without padding (22 characters), and
its generator never hands out the zero id, the metadata topic's id (1), or a text that starts
with '-' (a command-line tool would read it as an option).
"""

import base64
import binascii
import re
import secrets
import uuid

TEXT_LENGTH = 22
MAX_TEXT_LENGTH = 24  # Uuid.fromString refuses longer text; 24 is the padded form
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]+={0,2}")
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
    """Why `text` is not a Kafka Uuid as Kafka's Uuid.fromString reads it, or None when it is one.

    Like Java's URL-safe decoder, the unused low bits of the last character are not checked, so a
    hand-written id such as the docs' `MkU3OEVBNTcwNTJENDM2Qk` is accepted, as Kafka accepts it."""
    if len(text) > MAX_TEXT_LENGTH or not _URL_SAFE.fullmatch(text):
        return f"a Kafka Uuid is {TEXT_LENGTH} characters of URL-safe base64 (kafka-storage random-uuid makes one)"
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return "not URL-safe base64 (kafka-storage random-uuid makes one)"
    if len(raw) != 16:
        return f"decodes to {len(raw)} bytes, not a Kafka Uuid's 16 (kafka-storage random-uuid makes one)"
    return None


__all__ = ["TEXT_LENGTH", "parse_problem", "random_text", "to_text"]
