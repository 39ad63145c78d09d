# Sourced by the bench scripts: a scratch directory `$work` and the PID of the server under
# test `$server_pid` (set it when starting one); the server is stopped and the directory
# removed when the script exits, however it exits.
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
