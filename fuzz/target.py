"""One fuzz target: a decode path and a valid input for it. Its own module, so that the families built on it
(fuzz/jaas.py, fuzz/oauthbearer.py) and the table of families (fuzz/targets.py) import it without a circle."""

import random
import re
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


#: how a saved input's file is named after its target: `<name, spaces as dashes>-<crash|hang>-seed<n>-index<n>.bin`
#: (the regression inputs of tests/fuzz/regressions, saved before the kind was named, leave it out)
_SAVED_INPUT = re.compile(r"(?P<label>.+?)(?:-(?:crash|hang))?-seed\d+-index\d+\.bin")


def file_label(target_name: str) -> str:
    """A target's name as its saved inputs' file names hold it (`request 19 v7` -> `request-19-v7`)."""
    return target_name.replace(" ", "-")


def saved_input_name(target_name: str, kind: str, seed: int, index: int) -> str:
    """The file name of the input `index` of `seed` that crashed (`kind` "crash") or hung ("hang") `target_name`."""
    return f"{file_label(target_name)}-{kind}-seed{seed}-index{index}.bin"


def saved_target_label(file_name: str) -> str | None:
    """The `file_label` of the target that a saved input's file names (None: not a saved input)."""
    match = _SAVED_INPUT.fullmatch(file_name)
    return None if match is None else match["label"]


__all__ = ["Target", "file_label", "saved_input_name", "saved_target_label"]
