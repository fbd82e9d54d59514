#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, starting from the committed seeds
# (seeds/<target>) and the corpus earlier runs grew here (corpus/<target>, not committed).
# Prints executions, coverage and corpus size per target; fails on the first crash, whose input
# libFuzzer leaves in artifacts/<target>/ (replay: fuzz/run.sh replay <target> <file>).
#
#   fuzz/run.sh 30                  # CI: 30 s each
#   fuzz/run.sh 600 route_bodies    # one target, ten minutes
#   FUZZ_SEED=1 fuzz/run.sh 30      # CI: the same sequence of inputs on every run
#   fuzz/run.sh replay event_decode artifacts/event_decode/crash-…
#
# The targets are libFuzzer binaries (libfuzzer-sys) built by plain cargo on the stable toolchain
# with LLVM's sanitizer-coverage instrumentation, the flags `cargo fuzz` passes, so neither a
# nightly toolchain nor cargo-fuzz is needed. No sanitizer: our crates forbid unsafe code. The
# `fuzz` profile (Cargo.toml) keeps debug assertions and overflow checks on and builds at
# opt-level 1 with parallel codegen: a third of the release build's time on two cores, and still
# hundreds of thousands of executions a second on the cheap targets.
set -euo pipefail
cd "$(dirname "$0")"
usage="usage: fuzz/run.sh SECONDS [TARGET...] | fuzz/run.sh replay TARGET FILE..."
mode=${1:?$usage}
shift

triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-sanitizer-coverage-stack-depth \
--cfg fuzzing ${RUSTFLAGS:-}"
# `--target` keeps the instrumentation out of build scripts and proc macros.
cargo build --quiet --target "$triple" --profile fuzz --bins
bin="target/$triple/fuzz"

if [ "$mode" = replay ]; then
  target=${1:?$usage}
  shift
  exec "$bin/$target" "$@"
fi
seconds=$mode
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(template event_decode route_bodies db_url limits)
fi
seed=()
if [ -n "${FUZZ_SEED:-}" ]; then
  seed=(-seed="$FUZZ_SEED")
fi

printf '%-14s %12s %10s %8s %8s\n' target executions exec/s coverage corpus
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  log=$(mktemp)
  if ! "$bin/$target" -artifact_prefix="artifacts/$target/" "corpus/$target" "seeds/$target" \
      -max_total_time="$seconds" -print_final_stats=1 "${seed[@]}" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz target $target failed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || echo 0)
  corpus=$(find "corpus/$target" -type f | wc -l)
  printf '%-14s %12s %10s %8s %8s\n' "$target" "$runs" "$speed" "$cov" "$corpus"
  rm -f "$log"
done
