"""Entry point for ``python -m spark_audit``."""

import sys

if __name__ == "__main__":
    # No ./.hypothesis in the operator's directory: the job imports kio (through authz, for the what-if replay), which
    # registers Hypothesis strategies when Hypothesis (a test dependency) is installed, and Hypothesis then caches its
    # Unicode tables in ./.hypothesis/. The job never needs Hypothesis: kio is kept from finding it.
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]

    from spark_audit.job import main

    sys.exit(main())
