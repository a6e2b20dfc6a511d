#!/usr/bin/env bash
# Installs the fake LLM server the end-to-end tests drive the real binary against, and the
# official `openai` Python SDK the gateway tests use as a client, pinned, into .ci/venv (shared
# with the MCP peers). Tests skip with a printed reason when they are absent. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
PY_PEERS=(
  "fakellm==0.3.5"
  "openai==3.51.0"
)
[[ -x venv/bin/python ]] || python3 -m venv venv
if ! venv/bin/python - "${PY_PEERS[@]}" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    assert m.version(name) == version, pin
PY
then
  venv/bin/pip install --quiet --disable-pip-version-check "${PY_PEERS[@]}"
fi
echo "llm peers: $(venv/bin/pip show fakellm openai 2>/dev/null | grep -E '^(Name|Version)' | paste -sd' ')"
