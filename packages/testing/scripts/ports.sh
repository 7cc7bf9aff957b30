# Sourced by the throwaway-server scripts beside it: which ports of 127.0.0.1 are taken.

# True when something listens on 127.0.0.1:$1.
in_use() {
  { exec 4<> "/dev/tcp/127.0.0.1/$1"; } 2> /dev/null || return 1
  exec 4<&-
}

# Prints the first port from $1 on that nothing listens on.
free_from() {
  local port="$1"
  while in_use "$port"; do port=$((port + 1)); done
  echo "$port"
}
