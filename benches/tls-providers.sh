#!/usr/bin/env bash
# TLS providers side by side: server CPU per connection and per request for shardline with each
# TLS library, next to redis-server 7 with TLS, same certificate, same clients, same run.
#
#   benches/tls-providers.sh [RUNS]            (default 3 runs; medians are printed)
#
# Rows: shardline `--tls-provider openssl` (the system's libssl), `--tls-provider rustls`
# (rustls + aws-lc-rs), and, when VENDORED_BIN names a shardline built with
# `--features vendored-openssl`, that binary with `--tls-provider openssl` (OpenSSL 3.5);
# then redis-server (from PATH) with `--tls-port`, its default user's password set.
# Per run and row, the server alone on CPU 0 (one shard), each client on CPU 1:
#   full       `openssl s_time -new`: TLS 1.3 full handshakes, server CPU per connection
#   resumed    `openssl s_time -reuse -tls1_2`: TLS 1.2 resumed handshakes (s_time resumes
#              TLS 1.2 sessions only), server CPU per connection
#   reconnect  `redis-benchmark --tls -k 0 -c 8 -t get`: TCP + TLS 1.3 + AUTH + GET per
#              connection; server CPU per connection and the client's p99 (ms). shardline
#              runs with its credentials cache on (`--credentials-cache-ttl-ms 600000`), so
#              AUTH costs a cache lookup, not a SHA-512-crypt verification (about 2 ms)
#   -P 16, -P 1  `redis-benchmark --tls -c 50 -r 100000 -d 16 -t set,get`: CPU per request
# Server CPU is utime+stime of the whole process from /proc/PID/stat (all threads).
# Loopback only: ports 16400 (data) and 19400 (metrics). Needs 2 CPUs, openssl, redis-server,
# redis-benchmark; builds the release binary first unless SHARDLINE_BIN is set.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
port=16400
metrics_port=19400
if [ -z "${SHARDLINE_BIN:-}" ]; then
  cargo build --release --locked -q -p shardline
  SHARDLINE_BIN=$PWD/target/release/shardline
fi

# shellcheck source=benches/scratch.sh
source benches/scratch.sh

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -keyout "$work/key.pem" -out "$work/cert.pem" -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
password=providers-password
printf '%s\n' "$password" | "$SHARDLINE_BIN" passwd --users "$work/users" default >/dev/null

# start_server ROW: starts the row's server on CPU 0 and waits for its port.
start_server() {
  rm -rf "$work/data"
  mkdir -p "$work/data"
  case $1 in
    redis)
      taskset -c 0 redis-server --port 0 --tls-port "$port" --tls-cert-file "$work/cert.pem" \
        --tls-key-file "$work/key.pem" --tls-auth-clients no --requirepass "$password" \
        --save '' --appendonly no --dir "$work/data" >"$work/server.log" 2>&1 &
      ;;
    *)
      local bin=$SHARDLINE_BIN provider=$1
      if [ "$1" = vendored ]; then bin=$VENDORED_BIN provider=openssl; fi
      taskset -c 0 "$bin" --smp 1 --appendonly no --data-dir "$work/data" --users "$work/users" \
        --credentials-cache-ttl-ms 600000 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --tls-provider "$provider" \
        --bind "127.0.0.1:$port" --metrics-bind "127.0.0.1:$metrics_port" \
        >"$work/server.log" 2>&1 &
      ;;
  esac
  server_pid=$!
  for _ in $(seq 100); do
    redis-cli --tls --cacert "$work/cert.pem" -p "$port" --user default --pass "$password" \
      --no-auth-warning ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "server $1 did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
}

stop_server() {
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
ticks_per_s=$(getconf CLK_TCK)
# per_unit TICKS UNITS: µs of server CPU per unit.
per_unit() { echo "$1 $2" | awk -v hz="$ticks_per_s" '{printf "%.2f", $1 * 1e6 / hz / $2}'; }

# s_time_conns ARGS...: connections `openssl s_time` made in 5 s.
s_time_conns() {
  taskset -c 1 openssl s_time -connect "127.0.0.1:$port" -CAfile "$work/cert.pem" -time 5 "$@" \
    2>/dev/null | awk '/connections in [0-9.]+ real seconds/ {print $1}' | tail -1
}

bench() {
  taskset -c 1 redis-benchmark --tls --cacert "$work/cert.pem" -p "$port" --user default \
    -a "$password" "$@" 2>/dev/null | tr '\r' '\n'
}

declare -A results
rows=(openssl rustls)
[ -n "${VENDORED_BIN:-}" ] && rows+=(vendored)
rows+=(redis)

for run in $(seq "$runs"); do
  for row in "${rows[@]}"; do
    start_server "$row"
    t0=$(cpu_ticks); n=$(s_time_conns -new); t1=$(cpu_ticks)
    results[$row,full]+=" $(per_unit $((t1 - t0)) "$n")"
    t0=$(cpu_ticks); n=$(s_time_conns -reuse -tls1_2); t1=$(cpu_ticks)
    results[$row,resumed]+=" $(per_unit $((t1 - t0)) "$n")"
    conns=20000
    t0=$(cpu_ticks); out=$(bench -k 0 -c 8 -n "$conns" -t get); t1=$(cpu_ticks)
    results[$row,reconnect]+=" $(per_unit $((t1 - t0)) "$conns")"
    # The latency summary's header is `avg min p50 p95 p99 max`.
    p99=$(echo "$out" | awk '/avg +min +p50/ {getline; print $5; exit}')
    results[$row,p99]+=" $p99"
    for pipeline in 16 1; do
      requests=$((pipeline == 16 ? 1000000 : 200000))
      t0=$(cpu_ticks)
      bench -c 50 -P "$pipeline" -n "$requests" -r 100000 -d 16 -t set,get -q >/dev/null
      t1=$(cpu_ticks)
      results[$row,p$pipeline]+=" $(per_unit $((t1 - t0)) $((2 * requests)))"
    done
    stop_server
    echo "run $run $row: full${results[$row,full]} resumed${results[$row,resumed]}" \
      "reconnect${results[$row,reconnect]} p99${results[$row,p99]}" \
      "P16${results[$row,p16]} P1${results[$row,p1]}" >&2
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
label() {
  case $1 in
    openssl) echo "shardline, system OpenSSL ($(openssl version | cut -d' ' -f2))" ;;
    vendored) echo "shardline, vendored OpenSSL 3.5" ;;
    rustls) echo "shardline, rustls + aws-lc-rs" ;;
    redis) echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-), system OpenSSL" ;;
  esac
}
echo
echo "Medians of $runs runs; server CPU µs per connection (full, resumed, reconnect) or per request (-P 16, -P 1); p99 of a reconnect in ms (client side)."
echo
echo "| server | full handshake | resumed | reconnect + AUTH + GET | reconnect p99 | -P 16 | -P 1 |"
echo "|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
  printf '| %s |' "$(label "$row")"
  for col in full resumed reconnect p99 p16 p1; do
    printf ' %s |' "$(echo "${results[$row,$col]}" | median)"
  done
  echo
done
