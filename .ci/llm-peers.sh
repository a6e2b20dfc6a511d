#!/usr/bin/env bash
# Installs the fake LLM server the end-to-end tests drive the real binary against, pinned, into
# .ci/venv (shared with the MCP peers). Tests skip with a printed reason when it is absent.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
FAKELLM="fakellm==0.3.5"
[[ -x venv/bin/python ]] || python3 -m venv venv
if ! venv/bin/python -c 'import importlib.metadata as m; assert m.version("fakellm") == "0.3.5"' 2>/dev/null; then
  venv/bin/pip install --quiet --disable-pip-version-check "$FAKELLM"
fi
echo "llm peers: fakellm $(venv/bin/python -c 'import importlib.metadata as m; print(m.version("fakellm"))')"
