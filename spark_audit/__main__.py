"""Entry point for ``python -m spark_audit``."""

import sys

from spark_audit.job import main

if __name__ == "__main__":
    sys.exit(main())
