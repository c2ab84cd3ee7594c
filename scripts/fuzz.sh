#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang, ASan + UBSan) and runs each for SECONDS
# (default 60) from its checked-in corpus, tests/fuzz/corpus/<target>. New inputs the fuzzer finds
# go to a scratch copy, not into the repository. A crash stops the run with the input saved as
# build/fuzz/crash-*: check it in under tests/fuzz/corpus/<target>/ as a regression once fixed.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzz_gmsh fuzz_command_line
# The targets run side by side (one core each), then each one's result is reported.
targets=(gmsh command_line)
pids=()
for target in "${targets[@]}"; do
  work=build/fuzz/corpus-$target
  rm -rf "$work" && mkdir -p "$work"
  echo "fuzz_$target: ${seconds} s from tests/fuzz/corpus/$target"
  build/fuzz/tests/fuzz/fuzz_$target "$work" "tests/fuzz/corpus/$target" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix=build/fuzz/ >"build/fuzz/fuzz_$target.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  target=${targets[$i]}
  status=0
  wait "${pids[$i]}" || status=$?
  grep -E "^(INFO: seed corpus|stat::number_of_executed_units|==[0-9]+==|SUMMARY)" \
    "build/fuzz/fuzz_$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "build/fuzz/fuzz_$target.log"
    echo "fuzz_$target found a failing input (exit $status): see build/fuzz/"
    failed=1
  fi
done
exit "$failed"
