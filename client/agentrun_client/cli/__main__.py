"""`python -m agentrun_client.cli`: the same as `agentrun-client`."""

import sys

from agentrun_client.cli import main

sys.exit(main())
