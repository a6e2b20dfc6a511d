#!/usr/bin/env bash
# The release binary must stay within the size written in .ci/size-budget (bytes, default
# features): a dependency cannot silently double it. Raise the budget only with a reason in
# BENCHMARKS.md.
# `size-budget.sh edge` checks the edge build (`--no-default-features --features edge`,
# docs/decisions/0039-edge-build.md) against .ci/size-budget-edge instead, built in its own
# target directory so the default binary is not replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "edge" ]; then
  budget=$(tr -dc '0-9' < .ci/size-budget-edge)
  CARGO_TARGET_DIR=target/edge cargo build --release --quiet --bin tackle \
    --no-default-features --features edge
  binary=target/edge/release/tackle
else
  budget=$(tr -dc '0-9' < .ci/size-budget)
  cargo build --release --quiet --bin tackle
  binary=target/release/tackle
fi
size=$(stat -c %s "$binary")
echo "release binary ${1:-default}: $size bytes (budget $budget)"
if [ "$size" -gt "$budget" ]; then
  echo "the release binary grew past its budget (.ci/size-budget${1:+-$1}): $size > $budget bytes" >&2
  exit 1
fi
