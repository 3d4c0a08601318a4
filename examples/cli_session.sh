#!/usr/bin/env bash
# The worked session with the command line (`agentrun runs …`, or `agentrun-client runs …`
# where only the client is installed): create, wait, answer, wait, read the events.
#
#   make run                          # the service, in another terminal
#   bash examples/cli_session.sh      # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed
set -euo pipefail
AGENTRUN=${AGENTRUN:-agentrun}  # the command to run (a path, or `agentrun-client`)

MODEL='{"provider": "scripted", "name": "demo", "script": [
  {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}},
                  {"name": "add", "arguments": {"a": 3, "b": 4}}]},
  {"text": "1+2=3 and 3+4=7"}]}'
TOOLS='[{"name": "add", "description": "Add two numbers", "parameters": {"type": "object",
  "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]'

RUN=$($AGENTRUN runs create "What are 1+2 and 3+4?" --model "$MODEL" --tools "$TOOLS" -q)
$AGENTRUN runs wait "$RUN" --timeout 30           # requires_action, with the two calls
$AGENTRUN runs submit "$RUN" --result call_1_0=3 --result call_1_1='"7"'
$AGENTRUN runs wait "$RUN" --status completed --timeout 30
$AGENTRUN runs events "$RUN"
