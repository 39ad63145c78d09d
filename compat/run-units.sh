#!/usr/bin/env bash
# compat/run-units.sh [SHARDLINE_BIN]
#
# Runs the units of Redis 7.0.15's own Tcl test suite that docs/compatibility.md tracks against
# a fresh shardline (--smp 2, defaults otherwise, loopback only), through compat/redis-tcl.sh
# (TLS + AUTH proxy, harness unmodified, "minimal" profile), and compares each unit's passed
# count with compat/baseline.txt: the run fails when a unit passes fewer tests than its
# baseline, so a regression cannot land unnoticed. A unit below its baseline is run again, up
# to three times (see RETRIES below), and its best count kept. More passes than the baseline
# are reported (raise the baseline and update docs/compatibility.md).
#
# Needs tclsh (Debian: tcl) and python3. Tracks every unit in which redis-server 7.0.15 passes
# at least one test in external mode (36 of the suite's 84; the others are all tagged
# external:skip, or need a server the harness starts itself). Takes about 17 minutes on 2 cores
# with a debug build: unit/type/zset takes 1.5-4 (its stress loops are thousands of sequential
# round trips through the TLS proxy), the list units 4-6 (unit/type/list-3 above all), so the
# per-unit limit is 360 s instead of redis-tcl.sh's default 240; a unit that waits for what is
# not built yet (unit/tracking's first test) has a shorter
# limit in the baseline's third column.
# Knobs: COMPAT_UNITS (space-separated units, default: every unit of the baseline),
# COMPAT_RETRIES (default 3),
# COMPAT_LOGDIR (keep the per-unit logs there), COMPAT_PORT (default 7690).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${SHARDLINE_BIN:-target/debug/shardline}}
PORT=${COMPAT_PORT:-7690}
BASELINE=compat/baseline.txt
UNITS=${COMPAT_UNITS:-$(grep -v '^#' "$BASELINE" | awk 'NF {print $1}' | tr '\n' ' ')}
# A unit's time limit: the baseline's third column, else UNIT_TIMEOUT (see the header).
UNIT_TIMEOUT=${REDIS_TCL_UNIT_TIMEOUT:-360}
unit_timeout() { awk -v u="$1" -v d="$UNIT_TIMEOUT" '$1 == u {print (NF >= 3 ? $3 : d)}' "$BASELINE"; }

command -v tclsh >/dev/null || { echo "compat: tclsh is missing (apt-get install tcl)"; exit 2; }
[ -x "$BIN" ] || { echo "compat: no shardline binary at $BIN"; exit 2; }

WORK=$(mktemp -d)
LOGDIR=${COMPAT_LOGDIR:-$WORK/logs}
mkdir -p "$LOGDIR"
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

PASS=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
printf '%s\n' "$PASS" | "$BIN" passwd --users "$WORK/users" default >/dev/null
# start_server: a fresh shardline (empty data directory) on $PORT, waited for.
start_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK/data"
  "$BIN" --smp 2 --data-dir "$WORK/data" --users "$WORK/users" --bind "127.0.0.1:$PORT" \
    --metrics-bind 127.0.0.1:0 >>"$LOGDIR/shardline.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    [ "$(grep -c "listening on 127.0.0.1:$PORT" "$LOGDIR/shardline.log" 2>/dev/null)" -ge "$1" ] && return
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOGDIR/shardline.log"; exit 2; }
    sleep 0.1
  done
}
start_server 1

# run_units OUT UNIT… : runs the units, the summary table in OUT; units with the same time
# limit run in one redis-tcl.sh call, in the order given.
run_units() {
  local out=$1 limit limits unit group
  shift
  : >"$out"
  limits=$(for unit in "$@"; do unit_timeout "$unit"; done | awk '!seen[$0]++')
  for limit in $limits; do
    group=()
    for unit in "$@"; do [ "$(unit_timeout "$unit")" = "$limit" ] && group+=("$unit"); done
    REDIS_TCL_LOGDIR="$LOGDIR" REDIS_TCL_BUDGET=${REDIS_TCL_BUDGET:-3000} \
      REDIS_TCL_UNIT_TIMEOUT="${limit:-$UNIT_TIMEOUT}" \
      bash compat/redis-tcl.sh compat/redis-7.0.15-tests.tar.gz 127.0.0.1 "$PORT" default "$PASS" \
      "${group[@]}" | tee -a "$out" || true
  done
}
# A unit below its baseline runs again, up to RETRIES times (COMPAT_RETRIES, default 3), each
# time on a fresh server (one server runs all units the first time; unit/type/list's race
# below, seen in every full run of 2026-12-03 evening and in none of the runs of list alone,
# then recurs on the same server): a few
# of the suite's tests are timing-sensitive on a loaded machine, and one of unit/type/list's
# ("BRPOPLPUSH with multiple blocked clients") sends two blocking commands on two connections
# back to back; when the connections sit on different shards and the one that sent first is
# read later, the other is queued first, and the test then waits for a reply that never comes
# until the unit's time limit (docs/compatibility.md, unit/type/list).
RETRIES=${COMPAT_RETRIES:-3}
passed() { awk -v u="$1" '$1 == u {print $3}' "$2"; }
baseline() { awk -v u="$1" '$1 == u {print $2}' "$BASELINE"; }

restarts=0
# shellcheck disable=SC2086
run_units "$WORK/summary.txt" $UNITS
for unit in $UNITS; do
  got=$(passed "$unit" "$WORK/summary.txt")
  for attempt in $(seq 1 "$RETRIES"); do
    [ "${got:-0}" -lt "$(baseline "$unit")" ] || break
    echo "compat: $unit passed ${got:-0} (< baseline): running it again on a fresh server ($attempt of $RETRIES)"
    restarts=$((restarts + 1))
    start_server "$((restarts + 1))"
    run_units "$WORK/retry.txt" "$unit"
    again=$(passed "$unit" "$WORK/retry.txt")
    if [ "${again:-0}" -gt "${got:-0}" ]; then
      sed -i "s|^$unit .*|$unit retry ${again} 0 - -|" "$WORK/summary.txt"
      got=$again
    fi
  done
done

status=0
echo
printf '%-32s %8s %8s\n' unit passed baseline
for unit in $UNITS; do
  want=$(baseline "$unit")
  got=$(passed "$unit" "$WORK/summary.txt")
  got=${got:-0}
  note=
  if [ "$got" -lt "${want:-0}" ]; then note="REGRESSION"; status=1
  elif [ "$got" -gt "${want:-0}" ]; then note="(above baseline: raise it)"; fi
  printf '%-32s %8s %8s %s\n' "$unit" "$got" "${want:-?}" "$note"
done
exit $status
