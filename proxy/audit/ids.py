"""Record ids and timestamps, cheap enough for two records per forwarded request.

`uuid.uuid4()` reads 16 bytes from the kernel for every id and `strftime` formats the whole
date for every record; a forwarded request makes three ids and two timestamps. Here an id is
a random UUIDv4 prefix drawn once per process plus a counter in the last group, still
UUID-shaped and unique per source (74 random bits tell processes apart, the counter tells
records apart), and the timestamp's second is formatted once per second.
"""

import itertools
import secrets
import time
import uuid

_COUNTER_BITS = 48  # the UUID's last group: 12 hex digits
_PREFIX = str(uuid.uuid4())[:24]  # "xxxxxxxx-xxxx-4xxx-yxxx-": version and variant kept
_counter = itertools.count(secrets.randbits(_COUNTER_BITS))
_COUNTER_MASK = (1 << _COUNTER_BITS) - 1

_second = -1
_second_text = ""


def new_id() -> str:
    """A UUID-shaped id, unique within this process and, with overwhelming odds, across processes."""
    return f"{_PREFIX}{next(_counter) & _COUNTER_MASK:012x}"


def utc_now() -> str:
    """Now in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (the audit schema's `time`)."""
    global _second, _second_text
    now = time.time()
    second = int(now)
    if second != _second:
        _second_text = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
        _second = second
    return f"{_second_text}{int((now - second) * 1000):03d}Z"
