#!/usr/bin/env bash
# The release binary must stay within the size written in .ci/size-budget (bytes, default
# features): a dependency cannot silently double it. Raise the budget only with a reason in
# BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=$(tr -dc '0-9' < .ci/size-budget)
cargo build --release --quiet --bin tackle
size=$(stat -c %s target/release/tackle)
echo "release binary: $size bytes (budget $budget)"
if [ "$size" -gt "$budget" ]; then
  echo "the release binary grew past its budget (.ci/size-budget): $size > $budget bytes" >&2
  exit 1
fi
