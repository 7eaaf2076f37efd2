"""The `envelope-proxy` command: the composition root that starts the proxy, the embedded controller,
the demo and the Spark audit job, and the tools beside them (SCRAM users, the dev CA, authorizer checks,
the pytest plug-in). It imports every other package and nothing imports it."""

import itertools
import os
import sys


def _is_the_command() -> bool:
    """This process is `envelope-proxy` (the console script) or `python -m envelope_proxy`."""
    if sys.argv and os.path.basename(sys.argv[0]).removesuffix(".exe") == "envelope-proxy":
        return True
    argv = getattr(sys, "orig_argv", [])
    return any(flag == "-m" and module in ("envelope_proxy", "envelope_proxy.cli") for flag, module in itertools.pairwise(argv))


# No stray files in the operator's working directory: kio (the protocol library) registers Hypothesis strategies when
# Hypothesis can be imported (it is a test dependency), and Hypothesis then caches its Unicode tables in ./.hypothesis/
# of whatever directory the command runs in. The command never needs Hypothesis, so it keeps kio from finding it;
# test processes (pytest, which imports this package through the plug-in entry point) are left alone.
if _is_the_command() and "hypothesis" not in sys.modules:
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # `import hypothesis` raises ImportError
