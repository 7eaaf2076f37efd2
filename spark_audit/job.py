"""The audit job's entry points: ``run`` for callers, ``main`` for command lines.

``spark-submit spark_audit/job.py --input DIR --output DIR`` runs this file as
a script, without the package on ``sys.path``; it puts the repository root
there first so that the rest of the package imports as usual.
"""

import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_audit.cli import main
from spark_audit.pipeline import run
from spark_audit.read import read_audit
from spark_audit.session import build_session

__all__ = ["build_session", "main", "read_audit", "run"]

if __name__ == "__main__":
    sys.exit(main())
