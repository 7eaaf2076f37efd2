"""Replay saved inputs (`<target name>-...bin`, as `python -m fuzz.run --crash-dir` saves them for every family)
through their decode path; prints one JSON line per file.

    python -m fuzz.replay tests/fuzz/regressions/*.bin

Run it in a process of its own: an input that still aborts a decoder kills this
process, and the caller sees the signal instead of a result.
"""

import json
import resource
import sys
from pathlib import Path

from envelope.errors import ProtocolError
from fuzz.target import file_label, saved_target_label
from fuzz.targets import FAMILIES

_ADDRESS_SPACE = 2048 * 2**20


def main(paths: list[str]) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (_ADDRESS_SPACE, _ADDRESS_SPACE))
    by_label = {file_label(target.name): target for family in FAMILIES.values() for target in family()}
    failed = 0
    for raw in paths:
        path = Path(raw)
        label = saved_target_label(path.name)
        if label not in by_label:
            raise SystemExit(f"{path.name}: not an input `python -m fuzz.run --crash-dir` saves")
        target = by_label[label]
        try:
            target.decode(path.read_bytes())
            outcome = "accepted"
        except ProtocolError as exc:
            outcome = f"refused: {exc}"
        except Exception as exc:
            outcome, failed = f"error: {type(exc).__name__}: {exc}", failed + 1
        print(json.dumps({"input": path.name, "outcome": outcome[:200]}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
