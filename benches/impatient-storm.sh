#!/usr/bin/env bash
# Impatient login storm: does the login rate hold when clients give up and retry?
#
#   benches/impatient-storm.sh [RUNS] [IMPATIENT_SECONDS]     (defaults: 3 runs, 20 s)
#
# Per run: a fresh `shardline --smp 1` (release build, --hash-mode yield, 5000-round user
# `bench`, --appendonly no) pinned to CPU 1, the load client pinned to CPU 0. A patient storm
# (64 clients, 10 s) gives the steady login rate R; then `storm --give-up-after-ms 1000` with
# 0.8 R clients (a live queue of ~0.8 s: just inside the clients' patience) runs for
# IMPATIENT_SECONDS and prints the logins completed in every second. The summary line gives
# the lowest second as a fraction of R and the seconds under 0.8 R. Needs 2 CPUs; builds with
# `cargo build --release` first. Loopback only, ports 16390 (data) and 19190 (metrics).
# SHARDLINE_ARGS adds server options, e.g. SHARDLINE_ARGS="--login-queue-lifo-ms 0" for a
# first-come-first-served login queue.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
impatient_s=${2:-20}
port=16390
metrics_port=19190
cargo build --release --locked -q -p shardline -p shardline-benches
bin=$PWD/target/release

# shellcheck source=benches/scratch.sh
source benches/scratch.sh

printf 'storm-password\n' | "$bin/shardline" passwd --users "$work/users" bench >/dev/null

start_server() {
  rm -rf "$work/data"
  mkdir -p "$work/data"
  taskset -c 1 "$bin/shardline" --smp 1 --hash-mode yield --appendonly no \
    --data-dir "$work/data" --users "$work/users" \
    --bind "127.0.0.1:$port" --metrics-bind "127.0.0.1:$metrics_port" ${SHARDLINE_ARGS:-} \
    >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "metrics on" "$work/server.log" 2>/dev/null && return
    sleep 0.1
  done
  cat "$work/server.log" >&2
  exit 1
}

load() {
  taskset -c 0 "$bin/shardline-load" --port "$port" --cacert "$work/data/cert.pem" \
    --user bench --password storm-password "$@" 2>&1 >/dev/null
}

for run in $(seq "$runs"); do
  start_server
  steady=$(load storm --concurrency 64 --duration-s 10 |
    sed -n 's/.* = \([0-9.]*\) conn\/s.*/\1/p')
  clients=$(awk -v r="$steady" 'BEGIN { printf "%d", 0.8 * r }')
  out=$(load storm --concurrency "$clients" --duration-s "$impatient_s" --give-up-after-ms 1000)
  rates=$(sed -n 's/.*logins per second: //p' <<<"$out")
  gave_up=$(sed -n 's/.* \([0-9]*\) given up$/\1/p' <<<"$out")
  awk -v r="$steady" -v run="$run" -v c="$clients" -v g="$gave_up" -v rates="$rates" 'BEGIN {
    n = split(rates, x, " "); min = x[1]; under = 0
    for (i = 1; i <= n; i++) { if (x[i] < min) min = x[i]; if (x[i] < 0.8 * r) under++ }
    printf "run %d: steady R %.0f conn/s, %d clients, given up %d\n  per second: %s\n", run, r, c, g, rates
    printf "  lowest second %d = %.0f%% of R, seconds under 0.8 R: %d of %d\n", min, 100 * min / r, under, n
  }'
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
done
