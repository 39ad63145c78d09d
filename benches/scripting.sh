#!/usr/bin/env bash
# Lua scripting: server CPU per EVALSHA and calls/s, shardline next to redis-server 7, same
# certificate, same load, same run.
#
#   benches/scripting.sh [RUNS]            (default 3 runs; medians are printed)
#
# Workloads (one `redis-benchmark --tls -c 50 -P 16` custom command each, EVALSHA of a script
# loaded with SCRIPT LOAD first):
#   release   redis-py Lock's release script (`redis.call('get', KEYS[1]) == ARGV[1]` then DEL),
#             on a lock held by another owner: GET, compare, return 0 (the key stays)
#   transfer  the 2-key transfer of server/tests/py/test_scripting_apps.py (GET, DECRBY KEYS[1],
#             INCRBY KEYS[2]) on keys `a` and `b`; `a` starts at 10^12 so every call moves a unit
# Rows (server placement; redis-benchmark always on CPU 1):
#   redis-server   redis-server (from PATH) with `--tls-port`, pinned to CPU 0
#   shardline 1    `shardline --smp 1` pinned to CPU 0: both keys on the one shard
#   shardline 2    `shardline --smp 2` on CPUs 0 and 1 (shard 1 shares CPU 1 with the client;
#                  one shard per CPU is the rule, so two shards cannot share CPU 0): transfer on
#                  `a`/`b` (hash slots 15495 and 3300: shards 1 and 0, every call spans both)
#                  and on `{a}x`/`{a}y` (both on shard 1) to separate the cross-shard cost
# Server CPU is utime+stime of the whole process from /proc/PID/stat (all threads); calls are
# counted by the server: the growth of the destination key (transfer) or redis-benchmark's -n
# (release). Each workload is sized by a calibration run in run 1 to last about 3 s. A server
# without scripting (SCRIPT LOAD refused) gets "not measured" rows and the script goes on.
# Loopback only: ports $PORT (default 16410, data) and $PORT + 3000 (metrics). Needs 2 CPUs,
# openssl, redis-server, redis-benchmark, redis-cli; builds the release binary first unless
# SHARDLINE_BIN is set.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
port=${PORT:-16410}
metrics_port=$((port + 3000))
clients=50
pipeline=16
seconds=3
if [ -z "${SHARDLINE_BIN:-}" ]; then
  cargo build --release --locked -q -p shardline
  SHARDLINE_BIN=$PWD/target/release/shardline
fi

# shellcheck source=benches/scratch.sh
source benches/scratch.sh

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -keyout "$work/key.pem" -out "$work/cert.pem" -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
password=scripting-password
printf '%s\n' "$password" | "$SHARDLINE_BIN" passwd --users "$work/users" default >/dev/null

# redis-py 5's Lock.LUA_RELEASE_SCRIPT, byte for byte (SHA1 c3f8721cbb97f72bc19e972846bd7aaf91901658).
release_script='
        local token = redis.call('"'get'"', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('"'del'"', KEYS[1])
        return 1
    '
transfer_script="
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if v < n then
  return 0
end
redis.call('DECRBY', KEYS[1], n)
redis.call('INCRBY', KEYS[2], n)
return 1
"
start_units=1000000000000

cli() {
  redis-cli --tls --cacert "$work/cert.pem" -p "$port" --user default --pass "$password" \
    --no-auth-warning "$@"
}

# start_server ROW: starts the row's server and waits for its port.
start_server() {
  rm -rf "$work/data"
  mkdir -p "$work/data"
  case $1 in
    redis)
      taskset -c 0 redis-server --port 0 --tls-port "$port" --tls-cert-file "$work/cert.pem" \
        --tls-key-file "$work/key.pem" --tls-auth-clients no --requirepass "$password" \
        --bind 127.0.0.1 --save '' --appendonly no --dir "$work/data" >"$work/server.log" 2>&1 &
      ;;
    smp1 | smp2)
      local cpus=0 smp=1
      if [ "$1" = smp2 ]; then cpus=0,1 smp=2; fi
      taskset -c "$cpus" "$SHARDLINE_BIN" --smp "$smp" --appendonly no --data-dir "$work/data" \
        --users "$work/users" --credentials-cache-ttl-ms 600000 --tls-cert "$work/cert.pem" \
        --tls-key "$work/key.pem" --bind "127.0.0.1:$port" \
        --metrics-bind "127.0.0.1:$metrics_port" >"$work/server.log" 2>&1 &
      ;;
  esac
  server_pid=$!
  for _ in $(seq 100); do
    cli ping 2>/dev/null | grep -q PONG && return 0
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

# bench N ARGS...: redis-benchmark on CPU 1 sending ARGS as its command N times; prints calls/s.
bench() {
  local n=$1
  shift
  taskset -c 1 redis-benchmark --tls --cacert "$work/cert.pem" -p "$port" --user default \
    -a "$password" -c "$clients" -P "$pipeline" -n "$n" -q "$@" 2>&1 | tr '\r' '\n' |
    sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

# load_script TEXT: SCRIPT LOAD; prints the SHA1, or fails with the server's reply in
# $work/refused.
load_script() {
  local reply
  reply=$(cli script load "$1" 2>&1)
  if [[ $reply =~ ^[0-9a-f]{40}$ ]]; then
    echo "$reply"
  else
    echo "$reply" >"$work/refused"
    return 1
  fi
}

# expect WHAT GOT WANT: stops the script when a reply is not the known one.
expect() {
  if [ "$2" != "$3" ]; then
    echo "$1: got '$2', expected '$3'" >&2
    exit 1
  fi
}

declare -A results sizes
# Workloads: name, row list.
workloads=(release transfer transfer-same)
rows_of() {
  case $1 in
    release) echo redis smp1 ;;
    transfer) echo redis smp1 smp2 ;;
    transfer-same) echo smp2 ;;
  esac
}
unavailable=()

# measure ROW WORKLOAD: one measurement; appends to results[ROW,WORKLOAD,{cps,cpu}].
measure() {
  local row=$1 workload=$2 sha src dst n rate t0 t1 calls
  case $workload in
    release)
      sha=$(load_script "$release_script") || return 1
      expect "release sha" "$sha" c3f8721cbb97f72bc19e972846bd7aaf91901658
      expect "SET" "$(cli set lock:bench someone-else)" OK
      expect "release by a non-owner" "$(cli evalsha "$sha" 1 lock:bench my-token)" 0
      set -- evalsha "$sha" 1 lock:bench my-token
      ;;
    transfer | transfer-same)
      sha=$(load_script "$transfer_script") || return 1
      src=a dst=b
      [ "$workload" = transfer-same ] && src='{a}x' dst='{a}y'
      expect "MSET" "$(cli mset "$src" "$start_units" "$dst" 0)" OK
      expect "transfer" "$(cli evalsha "$sha" 2 "$src" "$dst" 1)" 1
      set -- evalsha "$sha" 2 "$src" "$dst" 1
      ;;
  esac
  n=${sizes[$row,$workload]:-}
  if [ -z "$n" ]; then
    rate=$(bench 20000 "$@")
    n=$(awk -v r="${rate:-0}" -v s="$seconds" 'BEGIN { n = int(r * s); if (n < 20000) n = 20000; if (n > 3000000) n = 3000000; print n }')
    sizes[$row,$workload]=$n
  fi
  local before=0
  [ "$workload" = release ] || before=$(cli get "$dst")
  t0=$(cpu_ticks)
  rate=$(bench "$n" "$@")
  t1=$(cpu_ticks)
  if [ "$workload" = release ]; then
    calls=$n
    expect "lock after the run" "$(cli get lock:bench)" someone-else
  else
    calls=$(($(cli get "$dst") - before))
    # redis-benchmark writes its last pipelines whole: up to clients × pipeline beyond -n.
    if [ "$calls" -lt "$n" ] || [ "$calls" -gt $((n + clients * pipeline)) ]; then
      echo "$row $workload: the destination grew by $calls for -n $n" >&2
      exit 1
    fi
    expect "units after the run" "$(($(cli get "$src") + $(cli get "$dst")))" "$start_units"
  fi
  [ -n "$rate" ] || { echo "$row $workload: no rate from redis-benchmark" >&2; exit 1; }
  results[$row,$workload,cps]+=" $rate"
  results[$row,$workload,cpu]+=" $(per_unit $((t1 - t0)) "$calls")"
}

label() {
  case $1 in
    redis) echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-), CPU 0" ;;
    smp1) echo "shardline --smp 1, CPU 0" ;;
    smp2) echo "shardline --smp 2, CPUs 0-1" ;;
  esac
}
describe() {
  case $1 in
    release) echo "Lock release (not owner)" ;;
    transfer) echo "transfer a → b" ;;
    transfer-same) echo "transfer {a}x → {a}y (one shard)" ;;
  esac
}
echo "scripting.sh: $runs run(s), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$runs"); do
  for row in redis smp1 smp2; do
    [[ " ${unavailable[*]} " == *" $row "* ]] && continue
    start_server "$row"
    for workload in "${workloads[@]}"; do
      [[ " $(rows_of "$workload") " == *" $row "* ]] || continue
      if ! measure "$row" "$workload"; then
        echo "$(label "$row"): scripting not available (SCRIPT LOAD replied:" \
          "$(head -c 200 "$work/refused")); its rows are not measured" >&2
        unavailable+=("$row")
        break
      fi
      echo "run $run $row $workload: calls/s${results[$row,$workload,cps]}" \
        "µs/call${results[$row,$workload,cpu]}" >&2
    done
    stop_server
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo
echo "Medians of $runs runs; redis-benchmark --tls -c $clients -P $pipeline on CPU 1; server CPU µs per call (whole process, utime+stime)."
echo
echo "| server | workload | calls/s | server CPU µs per call |"
echo "|---|---|---|---|"
for workload in "${workloads[@]}"; do
  for row in $(rows_of "$workload"); do
    if [ -z "${results[$row,$workload,cps]:-}" ]; then
      printf '| %s | %s | not measured | not measured |\n' "$(label "$row")" "$(describe "$workload")"
      continue
    fi
    printf '| %s | %s | %s | %s |\n' "$(label "$row")" "$(describe "$workload")" \
      "$(echo "${results[$row,$workload,cps]}" | median | xargs printf '%.0f')" \
      "$(echo "${results[$row,$workload,cpu]}" | median)"
  done
done
if [ ${#unavailable[@]} -gt 0 ]; then
  echo
  echo "Not measured: ${unavailable[*]} refused SCRIPT LOAD (no scripting in this build)."
fi
