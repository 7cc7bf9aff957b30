#!/usr/bin/env bash
# A throwaway ClickHouse server for tests and benchmarks, from the Debian package's stock config:
#   server.sh start <dir> [http port]   starts it with every path under <dir>, on 127.0.0.1 only
#                                       (HTTP on the port given, else the first free from 18123;
#                                       native and interserver on the next two), waits for /ping,
#                                       prints its URL
#   server.sh stop <dir>                stops it
# Install first (keeping dpkg from starting the system service):
#   printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
#   apt-get install -y clickhouse-server
set -euo pipefail
command="${1:?usage: server.sh start|stop <dir> [http port]}"
dir="${2:?usage: server.sh start|stop <dir> [http port]}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# GET /ping over bash's /dev/tcp: no curl needed.
ping() {
  { exec 3<> "/dev/tcp/127.0.0.1/$1"; } 2> /dev/null || return 1
  printf 'GET /ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  local reply
  reply="$(timeout 2 cat <&3)" || true
  exec 3<&-
  [[ "$reply" == *"Ok."* ]]
}

# Whether something listens on the port.
in_use() {
  { exec 4<> "/dev/tcp/127.0.0.1/$1"; } 2> /dev/null || return 1
  exec 4<&-
}

case "$command" in
start)
  port="${3:-}"
  if [ -z "$port" ]; then
    port=18123
    while in_use "$port" || in_use $((port + 1)) || in_use $((port + 2)); do port=$((port + 3)); done
  fi
  stock=/etc/clickhouse-server
  [ -f "$stock/config.xml" ] || { echo "clickhouse-server is not installed ($stock/config.xml missing)" >&2; exit 1; }
  mkdir -p "$dir/etc" "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"
  cp "$stock/users.xml" "$dir/etc/users.xml"
  # Paths into <dir>; listen on 127.0.0.1 only; the native and interserver ports next to the HTTP one.
  sed -e "s#/var/lib/clickhouse/tmp/#$dir/tmp/#" \
      -e "s#/var/lib/clickhouse/user_files/#$dir/user_files/#" \
      -e "s#/var/lib/clickhouse/format_schemas/#$dir/format_schemas/#" \
      -e "s#<path>/var/lib/clickhouse/</path>#<path>$dir/data/</path>#" \
      -e "s#/var/log/clickhouse-server/#$dir/log/#g" \
      -e "s#<listen_host>::1</listen_host>##" \
      -e "s#<http_port>8123</http_port>#<http_port>$port</http_port>#" \
      -e "s#<tcp_port>9000</tcp_port>#<tcp_port>$((port + 1))</tcp_port>#" \
      -e "s#<interserver_http_port>9009</interserver_http_port>#<interserver_http_port>$((port + 2))</interserver_http_port>#" \
      "$stock/config.xml" > "$dir/etc/config.xml"
  # Every standard stream away from the caller's: `url="$(server.sh start …)"` waits until the last
  # holder of its pipe exits, and the server must not be one.
  cd "$dir"
  nohup clickhouse-server --config-file="$dir/etc/config.xml" < /dev/null > "$dir/log/stdout.log" 2>&1 &
  echo $! > "$dir/pid"
  # A fresh server answers in well under a second; one with much data loads its parts first.
  for _ in $(seq 1 600); do
    if ping "$port"; then
      echo "http://127.0.0.1:$port"
      exit 0
    fi
    if ! kill -0 "$(cat "$dir/pid")" 2> /dev/null; then break; fi
    sleep 0.1
  done
  echo "clickhouse-server did not answer /ping on port $port within 60 s; its log:" >&2
  tail -n 20 "$dir/log/stdout.log" "$dir/log/clickhouse-server.err.log" >&2 || true
  exit 1
  ;;
stop)
  [ -f "$dir/pid" ] || exit 0
  pid="$(cat "$dir/pid")"
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || { rm -f "$dir/pid"; exit 0; }; sleep 0.1; done
  kill -9 "$pid" 2> /dev/null || true
  rm -f "$dir/pid"
  ;;
*)
  echo "usage: server.sh start|stop <dir> [http port]" >&2
  exit 2
  ;;
esac
