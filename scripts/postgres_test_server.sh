#!/bin/sh
# A throwaway PostgreSQL cluster for the PostgreSQL store tests: trust auth on 127.0.0.1 and a
# free port, in a temporary directory, with a role `acp` that may CREATE DATABASE and owns the
# database `acp` (the printed URL's, usable as `--store` as it is).
#
#   scripts/postgres_test_server.sh [start [DIR]]
#                                              starts one (in DIR, an empty directory, when given;
#                                              else in a new temporary one); prints its URL on
#                                              stdout and, on stderr, the command that stops it
#   scripts/postgres_test_server.sh stop DIR   stops the cluster in DIR and removes DIR
#   scripts/postgres_test_server.sh run CMD…   starts one, runs CMD with ACP_HARNESS_TEST_POSTGRES
#                                              set to its URL, then stops and removes it
#
# Run as root, the cluster runs as the `postgres` OS user (the server refuses to run as root);
# otherwise as the current user. The binaries come from $PG_BIN, else `pg_config --bindir`, else
# the newest /usr/lib/postgresql/*/bin; when there are none and this runs as root on a machine
# with apt-get, it installs the `postgresql` package first.
set -eu

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return
  fi
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$dir" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "postgres_test_server: installing the postgresql package" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || true
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  fi
  if [ -z "$dir" ]; then
    echo "postgres_test_server: no PostgreSQL binaries found (install the postgresql package)" >&2
    exit 1
  fi
  echo "$dir"
}

# Runs a command as the cluster's OS user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });' 2>/dev/null ||
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  bin=$(pg_bin)
  if [ -n "${1:-}" ]; then
    dir=$1
    mkdir -p "$dir"
  else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/acp-pg.XXXXXX")
  fi
  chmod 755 "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    exit 1
  }
  # autovacuum off: a worker inside a test database belongs to the superuser, which the test role
  # may not terminate, so `DROP DATABASE ... WITH (FORCE)` would fail while it is there.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=300 -c autovacuum=off" start >/dev/null; then
      break
    fi
    if [ "$attempt" = 5 ]; then
      cat "$dir/server.log" >&2
      rm -rf "$dir"
      exit 1
    fi
  done
  as_owner "$bin/createuser" -h 127.0.0.1 -p "$port" -U postgres --createdb acp
  # A database the role owns, so that the URL works as `--store` as it is (in `postgres` the role
  # may not create tables); the tests create a database of their own from it.
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres -O acp acp
  STARTED_DIR=$dir
  STARTED_URL="postgres://acp@127.0.0.1:$port/acp"
}

stop() {
  dir=$1
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    echo "postgres_test_server: $dir holds no cluster" >&2
    exit 1
  fi
  as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-start}" in
  start)
    start "${2:-}"
    echo "$STARTED_URL"
    echo "stop with: $0 stop $STARTED_DIR" >&2
    ;;
  stop)
    stop "${2:?usage: $0 stop DIR}"
    ;;
  run)
    shift
    start
    trap 'stop "$STARTED_DIR"' EXIT
    trap 'exit 130' INT TERM
    ACP_HARNESS_TEST_POSTGRES=$STARTED_URL "$@"
    ;;
  *)
    echo "usage: $0 [start [DIR] | stop DIR | run CMD…]" >&2
    exit 2
    ;;
esac
