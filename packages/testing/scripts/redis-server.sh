#!/usr/bin/env bash
# A throwaway Redis server for tests and benchmarks, from Debian's package:
#   redis-server.sh start <dir> [port]   starts it on 127.0.0.1 only (on the port given, else the
#                                        first free from 63799), no persistence, its files in <dir>;
#                                        prints its URL
#   redis-server.sh stop <dir>           stops it
# Install first: apt-get install -y redis-server (dpkg must not start the system service).
set -euo pipefail
command="${1:?usage: redis-server.sh start|stop <dir> [port]}"
dir="${2:?usage: redis-server.sh start|stop <dir> [port]}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
command -v redis-server > /dev/null || { echo "redis-server is not installed" >&2; exit 1; }

# in_use, free_from
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

case "$command" in
start)
  port="${3:-}"
  [ -n "$port" ] || port="$(free_from 63799)"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" > /dev/null
  for _ in $(seq 1 100); do in_use "$port" && break; sleep 0.05; done
  in_use "$port" || { echo "redis-server did not start (see $dir/redis.log)" >&2; exit 1; }
  echo "redis://127.0.0.1:$port/0"
  ;;
stop)
  if [ -f "$dir/redis.pid" ]; then kill "$(cat "$dir/redis.pid")" 2> /dev/null || true; fi
  ;;
*)
  echo "usage: redis-server.sh start|stop <dir> [port]" >&2
  exit 2
  ;;
esac
