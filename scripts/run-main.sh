#!/usr/bin/env bash
# Builds the release configuration and runs arenafem's main job: the memory-stability benchmark on
# the default MPM scene (a 2D sand column collapsing into a pile, 5,000 steps). It prints the memory
# every 100 steps, writes memory.csv, memory.svg and summary.json into ./memory_stability, and exits
# non-zero if any upstream allocation happens or the reserved bytes change after the warm-up.
# Extra arguments go to the benchmark (see memory_stability --help).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target memory_stability
exec build/release/bench/memory_stability "$@"
