#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1 for the tests of schedules shared by several
# daemons (crates/tackle-store/tests/shared_engine.rs, tests/daemons_shared.rs); installs
# Debian's `postgresql` when it is missing. Never fails the run: when it cannot install or
# start, it says why and those tests skip with a printed reason.
# Writes the cluster's URL to .ci/postgres.url; `bash .ci/postgres-peers.sh stop` (run by
# .ci/test when the tests end) stops it and removes its files.
cd "$(dirname "$0")" || exit 0

as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

if [[ "${1:-}" == "stop" ]]; then
  if [[ -f postgres.dir ]]; then
    dir="$(cat postgres.dir)"
    bin="$(cat postgres.bin 2>/dev/null)"
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
  rm -f postgres.url postgres.dir postgres.bin
  exit 0
fi

rm -f postgres.url
find_bin() {
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/pg_ctl" && -x "$d/initdb" ]] && { echo "$d"; return; }
  done
}
bin="$(find_bin)"
if [[ -z "$bin" ]]; then
  if ! command -v apt-get >/dev/null 2>&1 || [[ "$(id -u)" != 0 ]]; then
    echo "postgres peers: PostgreSQL is not installed and cannot be (no apt-get or not root); the shared-engine tests will skip"
    exit 0
  fi
  if ! log="$( (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends postgresql) 2>&1)"; then
    echo "postgres peers: could not install postgresql, the shared-engine tests will skip:"
    echo "$log" | tail -n 5
    exit 0
  fi
  bin="$(find_bin)"
fi
if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
  echo "postgres peers: running as root and there is no postgres user to run the server as; the shared-engine tests will skip"
  exit 0
fi
dir="$(mktemp -d /tmp/tackle-pg.XXXXXX)"
[[ "$(id -u)" == 0 ]] && chown postgres "$dir"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if ! out="$(as_owner "$bin/initdb" -D "$dir/data" -A trust -U tackle -E UTF8 --no-sync 2>&1)"; then
  echo "postgres peers: initdb failed, the shared-engine tests will skip:"
  echo "$out" | tail -n 5
  rm -rf "$dir"
  exit 0
fi
if ! out="$(as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  start 2>&1)"; then
  echo "postgres peers: the server did not start, the shared-engine tests will skip:"
  echo "$out" | tail -n 5
  tail -n 5 "$dir/server.log" 2>/dev/null
  rm -rf "$dir"
  exit 0
fi
echo "$dir" > postgres.dir
echo "$bin" > postgres.bin
echo "postgres://tackle@127.0.0.1:$port/postgres?sslmode=disable" > postgres.url
echo "postgres peers: $("$bin/postgres" --version) on 127.0.0.1:$port"
