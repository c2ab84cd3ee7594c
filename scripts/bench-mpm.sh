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
# Medians of 5 repetitions for arenafem (Google Benchmark), the fastest of 3 runs for the peer (as
# its own runner reports it). The machine is shared: compare the ratios, not the bare figures.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
peers=$(cd "${1:-$root/../shared/peers}" && pwd)
out=$root/build/bench-mpm
mkdir -p "$out"

cmake --preset release >/dev/null
cmake --build --preset release --target bench_mpm -j "$(nproc)" >/dev/null
g++ -std=c++17 -O3 -march=native -fopenmp -o "$out/mpm_ref" "$peers/mpm_ref/mpm_ref.cpp"

ours() {  # threads, label
  OMP_NUM_THREADS=$1 build/release/bench/bench_mpm --benchmark_filter='dam_break' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_format=json >"$out/ours_$2.json" 2>/dev/null
}
peer() {  # threads, label
  : >"$out/peer_$2.jsonl"
  for config in "2 128 32768 2000" "3 64 262144 100"; do
    for _ in 1 2 3; do
      # shellcheck disable=SC2086
      "$out/mpm_ref" $config "$1" 2>/dev/null >>"$out/peer_$2.jsonl"
    done
  done
}

echo "measuring: 1 thread, 2 threads, 2 threads with core 0 busy (a few minutes)" >&2
ours 1 t1
peer 1 t1
ours 2 t2
peer 2 t2
taskset -c 0 bash -c 'while :; do :; done' &
spinner=$!
trap 'kill $spinner 2>/dev/null || true' EXIT
ours 2 busy
peer 2 busy
kill $spinner
wait $spinner 2>/dev/null || true
trap - EXIT

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
rows = []
for label, name in (("t1", "1 thread"), ("t2", "2 threads"), ("busy", "2 threads, core 0 busy")):
    ours = {}
    for b in json.load(open(f"{out}/ours_{label}.json"))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            dim = 3 if "3d" in b["name"] else 2
            basis = "bspline2" if "bspline2:1" in b["name"] else "q1"
            ours[(dim, basis)] = b["particle_steps_per_s"]
    peer = {}
    for line in open(f"{out}/peer_{label}.jsonl"):
        r = json.loads(line)
        peer[r["dim"]] = max(peer.get(r["dim"], 0.0), r["particle_steps_per_s"])
    for dim, scene in ((2, "2D fluid, 128² grid, 33k particles"), (3, "3D fluid, 64³ grid, 412k particles (peer 262k)")):
        for basis in ("q1", "bspline2"):
            rows.append((scene, basis, name, ours[(dim, basis)], peer[dim]))
print("| work | basis | threads | arenafem | mpm_ref (B-splines) | arenafem / mpm_ref |")
print("|---|---|---|---|---|---|")
for scene, basis, name, o, p in rows:
    print(f"| {scene} | {basis} | {name} | {o / 1e6:.2f} M/s | {p / 1e6:.2f} M/s | {o / p:.2f} |")
# Thread scaling: each 2-thread run against the same program's 1-thread run (above 1: faster).
speed = {(scene, basis, name): (o, p) for scene, basis, name, o, p in rows}
print()
print("| work | basis | arenafem: 2 threads / 1 | arenafem: 2 threads, core 0 busy / 1 "
      "| mpm_ref: 2 threads / 1 | mpm_ref: 2 threads, core 0 busy / 1 |")
print("|---|---|---|---|---|---|")
for scene, basis, name, o, p in rows:
    if name != "1 thread":
        continue
    two = speed[(scene, basis, "2 threads")]
    busy = speed[(scene, basis, "2 threads, core 0 busy")]
    print(f"| {scene} | {basis} | {two[0] / o:.2f} | {busy[0] / o:.2f} | {two[1] / p:.2f} "
          f"| {busy[1] / p:.2f} |")
EOF
