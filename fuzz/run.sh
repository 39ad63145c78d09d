#!/usr/bin/env bash
# Builds the fuzz targets and runs each for SECONDS (default 30) from its committed seeds.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Each run starts from fuzz/corpus/<target>/ (read only) and writes what it finds to a
# scratch working corpus, fuzz/work/<target>/ (ignored by git, emptied first), so only the
# curated seeds are ever committed. Any crash, panic, timeout (> 10 s per input) or
# over-limit allocation fails the script; the input is saved in fuzz/artifacts/<target>/ and
# `cargo fuzz run <target> <that file>` replays it.
#
# Stable Rust is enough: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags (AddressSanitizer,
# coverage instrumentation). Targets are built with debug assertions (-a), so integer
# overflow panics. cargo-fuzz is installed when missing; libFuzzer needs a C++ compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(resp_parser users_file sha512_crypt_format command_loop dump_payload)

export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz@0.13.2 --locked
# cargo fuzz has no --locked: refuse a Cargo.lock that would need updating.
cargo metadata --manifest-path fuzz/Cargo.toml --locked --format-version 1 >/dev/null
cargo fuzz build -a

# Largest single allocation allowed (MiB, needs AddressSanitizer's allocator): resp_parser
# may reserve a whole announced bulk (proto-max-bulk-len, 512 MiB) as the server does;
# nothing else may allocate more than 64 MiB from a 4 KiB input.
malloc_limit() { if [ "$1" = resp_parser ]; then echo 1024; else echo 64; fi; }

for t in "${targets[@]}"; do
  work=fuzz/work/$t
  rm -rf "$work"
  mkdir -p "$work"
  echo "fuzz/run.sh: $t for ${seconds} s"
  cargo fuzz run -a "$t" "$work" "fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb="$(malloc_limit "$t")" -print_final_stats=1
done
