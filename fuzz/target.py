"""One fuzz target: a decode path and a valid input for it. Its own module, so that the families built on it
(fuzz/jaas.py, fuzz/oauthbearer.py) and the table of families (fuzz/targets.py) import it without a circle."""

import random
from collections.abc import Callable
from dataclasses import dataclass

from envelope.bounded_plan import plan_of
from fuzz.generate import Generated, body


@dataclass(frozen=True, slots=True)
class Target:
    """One decode path and a valid input for it: `prefix` + a generated body."""

    name: str
    schema: type[object]
    prefix: bytes
    decode: Callable[[bytes], None]

    def valid(self, rng: random.Random) -> tuple[bytes, Generated]:
        generated = body(plan_of(self.schema), rng)
        return self.prefix, generated


__all__ = ["Target"]
