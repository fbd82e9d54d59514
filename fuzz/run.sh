#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, starting from the committed seeds
# (seeds/<target>) and the corpus earlier runs grew here (corpus/<target>, not committed).
# Prints executions, coverage and corpus size per target; fails on the first crash, whose input
# libFuzzer leaves in artifacts/<target>/ (replay: cargo +nightly fuzz run <target> <file>).
#
#   fuzz/run.sh 30                  # CI: 30 s each
#   fuzz/run.sh 600 route_bodies    # one target, ten minutes
#   FUZZ_SEED=1 fuzz/run.sh 30      # CI: the same sequence of inputs on every run
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(template event_decode route_bodies db_url limits)
fi

# cargo-fuzz needs a nightly toolchain (for the sanitizer-coverage flags). Without one that can be
# installed, the stable compiler is told to accept them (RUSTC_BOOTSTRAP).
toolchain=+nightly
if ! rustup run nightly rustc --version >/dev/null 2>&1 \
    && ! rustup toolchain install nightly --profile minimal >/dev/null 2>&1; then
  echo "no nightly toolchain: fuzzing with the stable compiler and RUSTC_BOOTSTRAP=1" >&2
  toolchain=+stable
  export RUSTC_BOOTSTRAP=1
fi
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi

# No sanitizer: our crates forbid unsafe code; debug assertions on (overflow checks).
flags=(--sanitizer none --debug-assertions)
seed=()
if [ -n "${FUZZ_SEED:-}" ]; then
  seed=(-seed="$FUZZ_SEED")
fi
cargo $toolchain fuzz build "${flags[@]}"

printf '%-14s %12s %10s %8s %8s\n' target executions exec/s coverage corpus
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  log=$(mktemp)
  if ! cargo $toolchain fuzz run "${flags[@]}" "$target" "corpus/$target" "seeds/$target" -- \
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
