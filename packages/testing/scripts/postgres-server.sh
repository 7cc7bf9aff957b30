#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests and benchmarks, from Debian's package (the binaries of
# /usr/lib/postgresql/<version>/bin):
#   postgres-server.sh start <dir> [port]   initialises a cluster in <dir> (owned by the user `postgres`:
#                                  PostgreSQL refuses to run as root), starts it on 127.0.0.1 only
#                                  (on the port given, else the first free from 54329), trust
#                                  authentication, fsync off; prints its URL
#   postgres-server.sh stop <dir>           stops it
# Install first: apt-get install -y postgresql (dpkg must not start the system service).
set -euo pipefail
command="${1:?usage: postgres-server.sh start|stop <dir> [port]}"
dir="${2:?usage: postgres-server.sh start|stop <dir> [port]}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

bin="$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)"
[ -x "$bin/pg_ctl" ] || { echo "postgresql is not installed (no /usr/lib/postgresql/*/bin/pg_ctl)" >&2; exit 1; }

# Runs a command as the user that owns the cluster (root is refused by PostgreSQL).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# in_use, free_from
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

case "$command" in
start)
  port="${3:-}"
  [ -n "$port" ] || port="$(free_from 54329)"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  # The owner may not enter the caller's working directory.
  cd "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres > "$dir/initdb.log" 2>&1
  # A start can fail on a port another process took meanwhile: the next port, three times at most.
  for attempt in 1 2 3; do
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start > /dev/null; then
      echo "postgres://postgres@127.0.0.1:$port/postgres"
      exit 0
    fi
    echo "postgres did not start on port $port (attempt $attempt); its log ends:" >&2
    tail -n 5 "$dir/server.log" >&2 || true
    port="$(free_from $((port + 1)))"
  done
  exit 1
  ;;
stop)
  cd "$dir"
  if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop > /dev/null 2>&1 || true; fi
  ;;
*)
  echo "usage: postgres-server.sh start|stop <dir> [port]" >&2
  exit 2
  ;;
esac
