#!/usr/bin/env bash
# The README's worked session over plain HTTP: create a run, wait (a long poll, no
# polling) until it asks for tools, answer them, wait until it has ended.
#
#   make run                          # the service, in another terminal
#   bash examples/http_session.sh     # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed
#
# Needs curl, and jq or python3 to read the run id. The model is the deterministic
# `scripted` provider: it asks for `add` twice, then answers.
set -euo pipefail
API=${AGENTRUN_BASE_URL:-http://127.0.0.1:8000}
api() {  # curl with the API key when there is one; fails on an HTTP error
  curl -sS --fail-with-body -H 'content-type: application/json' \
    ${AGENTRUN_API_KEY:+-H "authorization: Bearer $AGENTRUN_API_KEY"} "$@"
}
field() {  # `field id`: that field of the JSON document on stdin (text as it is)
  if command -v "${JQ:-jq}" >/dev/null; then "${JQ:-jq}" -r ".$1"
  else python3 -c 'import json, sys; v = json.load(sys.stdin)[sys.argv[1]]
print(v if isinstance(v, str) else json.dumps(v, indent=2))' "$1"; fi
}

# 1. Create the run; keep its id.
RUN=$(api -X POST "$API/v1/runs" -d '{
  "prompt": "What are 1+2 and 3+4?",
  "model": {"provider": "scripted", "name": "demo", "script": [
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}},
                    {"name": "add", "arguments": {"a": 3, "b": 4}}]},
    {"text": "1+2=3 and 3+4=7"}]},
  "tools": [{"name": "add", "description": "Add two numbers",
             "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                            "b": {"type": "number"}}, "required": ["a", "b"]}}]
}' | field id)
echo "run: $RUN"

# 2. Wait until it is suspended (or has ended): it asks for the two tool calls.
api "$API/v1/runs/$RUN/wait?timeout=30" | field required_action

# 3. Post the results (all at once, or one call per request; re-sending is a no-op).
api -X POST "$API/v1/runs/$RUN/tool-results" -d '{"results": [
  {"tool_call_id": "call_1_0", "output": "3"},
  {"tool_call_id": "call_1_1", "output": "7"}]}' | field resumed

# 4. Wait until it has completed: its answer. (Its event log: GET $API/v1/runs/$RUN/events)
api "$API/v1/runs/$RUN/wait?status=completed&timeout=30" | field output
