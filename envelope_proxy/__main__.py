"""`python -m envelope_proxy`: the `envelope-proxy` command."""

import sys

from envelope_proxy.cli import main

sys.exit(main())
