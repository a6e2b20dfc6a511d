#!/usr/bin/env bash
# Prints every figure of the lean-and-fast table (binary size, `tools list` start-up, MCP stdio
# round trip, dispatcher overhead, concurrent shell calls, grep against ripgrep) beside its
# yardstick, as a Markdown table for BENCHMARKS.md.
#   benches/compare.sh            build, run the criterion benches, measure
#   benches/compare.sh --quick    measure the existing build and criterion estimates only
# TACKLE_BIN=/path/to/tackle measures that build instead of target/release/tackle (with
# --quick, which builds nothing).
# ZEPTOCLAW_BIN=/path/to/zeptoclaw measures ZeptoClaw beside Tackle in the same run, interleaved:
# binary size, `zeptoclaw tools list` wall and max RSS, and its `mcp-server` stdio round trip
# (the `echo` tool), each with the ratio Tackle/ZeptoClaw. The script never downloads or builds
# ZeptoClaw; point it at a build of your own (e.g. `cargo install zeptoclaw --root /tmp/zc` gives
# /tmp/zc/bin/zeptoclaw). ZeptoClaw runs offline with HOME set to a fresh temporary directory and
# needs no `onboard` or config. Without the variable its columns say `n/a (set ZEPTOCLAW_BIN)`.
#   TACKLE_BIN=/tmp/t/release/tackle ZEPTOCLAW_BIN=/tmp/zc/bin/zeptoclaw benches/compare.sh --quick
set -euo pipefail
# Paths given relative to the caller's directory still name the same files after the cd below.
for var in TACKLE_BIN ZEPTOCLAW_BIN; do
  if [ -n "${!var:-}" ] && [ "${!var#/}" = "${!var}" ]; then
    export "$var=$PWD/${!var}"
  fi
done
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
