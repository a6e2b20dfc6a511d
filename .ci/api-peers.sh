#!/usr/bin/env bash
# Installs schemathesis (PyPI), the property-based API fuzzer tests/gateway_schemathesis.rs
# runs against the daemon's live HTTP API and its /openapi.json, pinned, into .ci/venv-api (a
# venv of its own: its dependencies must not move the MCP and LLM peers' pins). The test skips
# with a printed reason when it is absent. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
PIN="schemathesis==4.32.5"
[[ -x venv-api/bin/python ]] || python3 -m venv venv-api
if ! venv-api/bin/python - "$PIN" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
name, version = sys.argv[1].split("==")
assert m.version(name) == version
PY
then
  venv-api/bin/pip install --quiet --disable-pip-version-check "$PIN" \
    || echo "api peers: could not install $PIN; the schemathesis test will skip"
fi
echo "api peers: $(venv-api/bin/st --version 2>/dev/null || echo 'schemathesis missing')"
