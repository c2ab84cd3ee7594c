#!/usr/bin/env bash
# MPM step throughput against the hand-written MLS-MPM peer, measured side by side in one run:
# the 2D dam break on 128² (about 33k particles) and the 3D dam break on 64³ (about 412k), on Q1
# and on quadratic B-splines (the peer's kernel), with 1 and 2 threads, and with 2 threads while a
# busy process holds core 0. Prints a Markdown table
# (particle-steps per second, ours, peer, ratio), then each program's 2-thread runs against its
# 1-thread run, and leaves the raw figures in build/bench-mpm/.
#
#   scripts/bench-mpm.sh [PEERS]    PEERS: the peer programs' folder (default ../shared/peers)
#
# Each round runs every configuration once, in turn: ours (Google Benchmark, one repetition) and
# the peer (one run), with 1 thread, with 2, and with 2 while a busy process holds core 0. The
# machine is shared and its load comes and goes within minutes, so a ratio is taken within each
# round (the two programs a minute apart at most) and the table gives the median over ROUNDS
# (environment, default 5) rounds; the rates beside it are medians too. Compare the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
peers=$(cd "${1:-$root/../shared/peers}" && pwd)
out=$root/build/bench-mpm
rounds=${ROUNDS:-5}
mkdir -p "$out"
rm -f "$out"/ours_*.json "$out"/peer_*.jsonl

cmake --preset release >/dev/null
cmake --build --preset release --target bench_mpm -j "$(nproc)" >/dev/null
g++ -std=c++17 -O3 -march=native -fopenmp -o "$out/mpm_ref" "$peers/mpm_ref/mpm_ref.cpp"

ours() {  # threads, label
  OMP_NUM_THREADS=$1 build/release/bench/bench_mpm --benchmark_filter='dam_break' \
    --benchmark_format=json >"$out/ours_$2.json" 2>/dev/null
}
peer() {  # threads, label
  : >"$out/peer_$2.jsonl"
  for config in "2 128 32768 2000" "3 64 262144 100"; do
    # shellcheck disable=SC2086
    "$out/mpm_ref" $config "$1" 2>/dev/null >>"$out/peer_$2.jsonl"
  done
}
spinner=
stop_spinner() {
  if [ -n "$spinner" ]; then
    kill "$spinner" 2>/dev/null || true
    wait "$spinner" 2>/dev/null || true
    spinner=
  fi
}
trap stop_spinner EXIT

echo "measuring $rounds rounds of: 1 thread, 2 threads, 2 threads with core 0 busy" >&2
for ((r = 0; r < rounds; ++r)); do
  echo "round $((r + 1)) of $rounds" >&2
  ours 1 "t1_$r"
  peer 1 "t1_$r"
  ours 2 "t2_$r"
  peer 2 "t2_$r"
  taskset -c 0 bash -c 'while :; do :; done' &
  spinner=$!
  ours 2 "busy_$r"
  peer 2 "busy_$r"
  stop_spinner
done

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
modes = (("t1", "1 thread"), ("t2", "2 threads"), ("busy", "2 threads, core 0 busy"))
scenes = ((2, "2D fluid, 128² grid, 33k particles"),
          (3, "3D fluid, 64³ grid, 412k particles (peer 262k)"))
bases = ("q1", "bspline2")


def ours(label):
    rates = {}
    for b in json.load(open(f"{out}/ours_{label}.json"))["benchmarks"]:
        dim = 3 if "3d" in b["name"] else 2
        basis = "bspline2" if "bspline2:1" in b["name"] else "q1"
        rates[(dim, basis)] = b["particle_steps_per_s"]
    return rates


def peer(label):
    return {r["dim"]: r["particle_steps_per_s"]
            for r in map(json.loads, open(f"{out}/peer_{label}.jsonl"))}


# runs[mode][round]: (ours by (dim, basis), the peer's by dim)
runs = {m: [(ours(f"{m}_{r}"), peer(f"{m}_{r}")) for r in range(rounds)] for m, _ in modes}
median = statistics.median
print("| work | basis | threads | arenafem | mpm_ref (B-splines) | arenafem / mpm_ref |")
print("|---|---|---|---|---|---|")
for m, name in modes:
    for dim, scene in scenes:
        for basis in bases:
            o = median(run[0][(dim, basis)] for run in runs[m])
            p = median(run[1][dim] for run in runs[m])
            ratio = median(run[0][(dim, basis)] / run[1][dim] for run in runs[m])
            print(f"| {scene} | {basis} | {name} | {o / 1e6:.2f} M/s | {p / 1e6:.2f} M/s "
                  f"| {ratio:.2f} |")


def scaling(mode, pick):
    """The median over rounds of a round's `mode` run against its 1-thread run."""
    return median(pick(runs[mode][r]) / pick(runs["t1"][r]) for r in range(rounds))


print()
print("| work | basis | arenafem: 2 threads / 1 | arenafem: 2 threads, core 0 busy / 1 "
      "| mpm_ref: 2 threads / 1 | mpm_ref: 2 threads, core 0 busy / 1 |")
print("|---|---|---|---|---|---|")
for dim, scene in scenes:
    for basis in bases:
        def ours_of(run):
            return run[0][(dim, basis)]

        def peer_of(run):
            return run[1][dim]

        print(f"| {scene} | {basis} | {scaling('t2', ours_of):.2f} "
              f"| {scaling('busy', ours_of):.2f} | {scaling('t2', peer_of):.2f} "
              f"| {scaling('busy', peer_of):.2f} |")
print()
print(f"Medians over {rounds} rounds; in each round every configuration ran once, "
      "the two programs in turn.")
EOF
