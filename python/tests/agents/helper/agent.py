"""The test agent, for `adk api_server` (its model answers from the request alone)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from scripted import agent  # noqa: E402

root_agent = agent()
