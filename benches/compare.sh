#!/usr/bin/env bash
# Prints every figure of the lean-and-fast table (binary size, `tools list` start-up, MCP stdio
# round trip, dispatcher overhead, concurrent shell calls, grep against ripgrep) beside its
# yardstick, as a Markdown table for BENCHMARKS.md.
#   benches/compare.sh            build, run the criterion benches, measure
#   benches/compare.sh --quick    measure the existing build and criterion estimates only
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--quick" ]; then
  cargo build --release --quiet
  bash .ci/mcp-peers.sh >/dev/null
  bash .ci/llm-peers.sh >/dev/null
  if ! command -v rg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq ripgrep >/dev/null 2>&1 || echo "ripgrep not installed: grep row is n/a"
  fi
  cargo bench --quiet --bench dispatch -- --warm-up-time 1 --measurement-time 5 >/dev/null
  cargo bench --quiet -p tackle-tools --bench grep -- grep_50k_files >/dev/null
fi
exec python3 benches/compare.py
