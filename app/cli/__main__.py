"""`python -m app.cli`: the same as `agentrun`."""

import sys

from app.cli import main

sys.exit(main())
