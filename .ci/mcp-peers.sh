#!/usr/bin/env bash
# Installs the real MCP peers the tackle-mcp tests talk to, pinned, into the repo:
#   .ci/venv                 mcp-server-time (PyPI) and the official Python SDK `mcp`
#   .ci/node_modules         @modelcontextprotocol/server-everything (npm)
# Tests find them there and skip with a printed reason when they are absent.
# Idempotent: a second run with everything in place does nothing.
set -euo pipefail
cd "$(dirname "$0")"

PY_PEERS=(
  "mcp-server-time==2026.10.19"
  "mcp==2.3.0"
)
NPM_PEERS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
)

if [[ ! -x venv/bin/mcp-server-time || ! -x venv/bin/python ]] \
  || ! venv/bin/python -c 'import mcp' 2>/dev/null; then
  python3 -m venv venv
  venv/bin/pip install --quiet --disable-pip-version-check "${PY_PEERS[@]}"
fi

if [[ ! -e node_modules/@modelcontextprotocol/server-everything/package.json ]]; then
  [[ -f package.json ]] || echo '{"name":"tackle-ci-peers","private":true}' > package.json
  npm install --silent --no-audit --no-fund --save-exact --prefix . "${NPM_PEERS[@]}"
fi

echo "mcp peers: $(venv/bin/pip show mcp-server-time mcp 2>/dev/null | grep -E '^(Name|Version)' | paste -sd' ')"
echo "mcp peers: server-everything $(node -p "require('./node_modules/@modelcontextprotocol/server-everything/package.json').version")"
