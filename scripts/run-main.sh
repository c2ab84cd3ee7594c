#!/usr/bin/env bash
# Builds the release configuration and runs arenafem's main job: for now the memory benchmark,
# which replays one allocation trace through malloc, std::pmr, arenafem's Pool and its Arena.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target bench_memory
exec build/release/bench/bench_memory --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true "$@"
