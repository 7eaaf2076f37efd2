"""The shell blocks of docs/deploy.md that make up its host path, as one bash script.

A block belongs to the host path when the line before its ```bash fence is an HTML comment (invisible on
GitHub):

    <!-- host-path -->            every way of running the proxy on a host
    <!-- host-path: process -->   only when the proxy runs as a plain process
    <!-- host-path: container --> only when it runs in a container (tools/container/engine)

`host_path_script(variant)` joins the blocks for one variant in the guide's order, each announced with its
line in the guide, so that a failing command names the block it came from. The script is run by one bash, as a
newcomer pastes the blocks into one terminal: variables, functions and the working directory carry over.

    python -m tests.deploy.guide_blocks [process|container]   # print the script
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
VARIANTS = ("process", "container")

_BLOCK = re.compile(r"^<!-- host-path(?::\s*(?P<variant>[a-z-]+))? -->\n```bash\n(?P<code>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    line: int  # of the ```bash fence in the guide
    variant: str | None  # None: every variant
    code: str


def host_path_blocks(text: str | None = None) -> list[Block]:
    text = GUIDE.read_text() if text is None else text
    blocks = []
    for match in _BLOCK.finditer(text):
        variant = match.group("variant")
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"docs/deploy.md line {text.count(chr(10), 0, match.start()) + 1}: unknown host-path variant {variant!r}")
        blocks.append(Block(text.count("\n", 0, match.start()) + 2, variant, match.group("code")))
    return blocks


def host_path_script(variant: str, text: str | None = None) -> str:
    """One bash script: the blocks for `variant`, stopping at the first failing command and naming its block."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    parts = [
        "set -euo pipefail",
        "trap 'echo \"GUIDE FAILED: docs/deploy.md block at line $GUIDE_BLOCK: exit $? from: $BASH_COMMAND\" >&2' ERR",
    ]
    for block in host_path_blocks(text):
        if block.variant in (None, variant):
            parts.append(f"GUIDE_BLOCK={block.line}; echo '>>> docs/deploy.md line {block.line}' >&2")
            parts.append(block.code.rstrip("\n"))
    parts.append("echo '>>> docs/deploy.md: host path done' >&2")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(host_path_script(sys.argv[1] if len(sys.argv) > 1 else "process"))
