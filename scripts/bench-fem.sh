#!/usr/bin/env bash
# Q1 assembly, SpMV and CG with Jacobi against deal.II 9.4 and the STREAM triad, measured side by
# side in one run: the 2D 1024² grid and the 3D 100³ hex mesh (the peer runner's problems), plus
# P1 on the 1M-tet mesh against arenafem's own repeated assembly. Prints Markdown tables (ours,
# deal.II, ratio below 1: arenafem faster) and leaves the raw figures in build/bench-fem/.
#
#   [ROUNDS=3] scripts/bench-fem.sh [PEERS]    PEERS: the peer programs' folder (default ../shared/peers)
#
# Needs deal.II (apt-get install -y libdeal.ii-dev). A program that fails leaves its messages in
# build/bench-fem/*.err. The programs run in ROUNDS rounds (default 3), each round STREAM, then
# arenafem (Google Benchmark, median of 3 repetitions, so that the first assemblies but one reuse
# the pool blocks the previous matrix gave back; one CG solve), then deal.II's runner (best of 3
# assemblies inside), so that a slow spell of a shared machine falls on both; every figure is the
# median over the rounds. 1 thread unless said. Compare the ratios, not the bare figures.
set -euo pipefail
peers=${1:-$(dirname "$0")/../../shared/peers}
if [ ! -d "$peers/dealii" ] || [ ! -d "$peers/stream" ]; then
  echo "bench-fem: no peer programs (dealii/, stream/) in $peers" >&2
  exit 1
fi
peers=$(cd "$peers" && pwd)
cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/build/bench-fem
mkdir -p "$out"
if [ ! -f /usr/include/deal.II/base/config.h ]; then
  echo "bench-fem: deal.II is not installed (apt-get install -y libdeal.ii-dev)" >&2
  exit 1
fi

cmake --preset release >/dev/null
cmake --build --preset release --target bench_fem -j "$(nproc)" >/dev/null
cmake -S "$peers/dealii" -B "$out/dealii" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/dealii" -j "$(nproc)" >/dev/null
g++ -O3 -march=native -fopenmp -o "$out/triad" "$peers/stream/triad.cpp"

rounds=${ROUNDS:-3}
echo "measuring: STREAM, arenafem, deal.II, $rounds rounds (about $((rounds * 4)) minutes)" >&2
rm -f "$out"/ours_*.json "$out"/ours_cg_*.json
: >"$out/stream.jsonl"
: >"$out/dealii.jsonl"
for round in $(seq "$rounds"); do
  for threads in 1 2; do
    OMP_PROC_BIND=close "$out/triad" "$threads" >>"$out/stream.jsonl"
  done
  OMP_NUM_THREADS=1 build/release/bench/bench_fem \
    --benchmark_filter='FirstWithPlan|BM_Assemble(Grid|Hex|Tet)(Q1|P1)/|Spmv' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_format=json >"$out/ours_$round.json" 2>"$out/ours.err"
  OMP_NUM_THREADS=1 build/release/bench/bench_fem --benchmark_filter='CgJacobi.*/1/' \
    --benchmark_format=json >"$out/ours_cg_$round.json" 2>"$out/ours_cg.err"
  for args in "2 1024 1" "3 100 1"; do
    # shellcheck disable=SC2086
    "$out/dealii/q1_laplace" $args >>"$out/dealii.jsonl" 2>>"$out/dealii.err"
  done
done

python3 - "$out" <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]

def median_runs(pattern, cut):
    """Each benchmark's figures, the median over the rounds' files."""
    runs = {}
    for path in sorted(glob.glob(f"{out}/{pattern}")):
        for b in json.load(open(path))["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            runs.setdefault(b["run_name"].split(cut)[0], []).append(b)
    return {name: {key: statistics.median(b[key] for b in bs)
                   for key in bs[0] if isinstance(bs[0][key], (int, float))}
            for name, bs in runs.items()}

ours = median_runs("ours_[0-9]*.json", "/min_time")
cg = median_runs("ours_cg_[0-9]*.json", "/iterations")
peer_runs = {}
for line in open(f"{out}/dealii.jsonl"):
    r = json.loads(line)
    peer_runs.setdefault(r["dim"], []).append(r)
peer = {dim: {key: statistics.median(r[key] for r in rs)
              for key in rs[0] if isinstance(rs[0][key], (int, float))}
        for dim, rs in peer_runs.items()}
stream_runs = {}
for line in open(f"{out}/stream.jsonl"):
    r = json.loads(line)
    stream_runs.setdefault(r["threads"], []).append(r["GBps"])
stream = {t: statistics.median(v) for t, v in stream_runs.items()}

def ms(name):
    return ours[name]["real_time"]  # benchmarks report milliseconds

print("| work | arenafem | deal.II | arenafem / deal.II |")
print("|---|---|---|---|")
for dim, mesh, tag in ((2, "2D 1024² grid", "Grid"), (3, "3D 100³ hexes", "Hex")):
    p = peer[dim]
    first = p["setup_sparsity_s"] + p["assemble_hand_s"]
    o = ms(f"BM_Assemble{tag}Q1_FirstWithPlan") / 1e3
    print(f"| {mesh}: first assembly (pattern + values) | {o:.3f} s | {p['setup_sparsity_s']:.3f} + "
          f"{p['assemble_hand_s']:.3f} s | {o / first:.2f} |")
    o = ms(f"BM_Assemble{tag}Q1") / 1e3
    print(f"| {mesh}: repeated assembly | {o:.3f} s | {p['assemble_hand_nosim_s']:.3f} s without its "
          f"translated-cell shortcut ({p['assemble_hand_s']:.3f} s with) | "
          f"{o / p['assemble_hand_nosim_s']:.2f} ({o / p['assemble_hand_s']:.2f}) |")
    o = ms(f"BM_Spmv{tag}Q1/1")
    print(f"| {mesh}: SpMV | {o:.1f} ms | {p['spmv_s'] * 1e3:.1f} ms | {o / (p['spmv_s'] * 1e3):.2f} |")
    c = cg[f"BM_CgJacobi{tag}Q1/1"]
    per = c["s/iteration"] * 1e3
    peer_per = p["cg_s"] / p["cg_iters"] * 1e3
    print(f"| {mesh}: CG + Jacobi to 1e-8, per iteration | {per:.1f} ms ({c['cg_iterations']:.0f} "
          f"iterations) | {peer_per:.1f} ms ({p['cg_iters']} iterations) | {per / peer_per:.2f} |")
first = ms("BM_AssembleTetP1_FirstWithPlan")
again = ms("BM_AssembleTetP1")
print(f"| P1, 1M tets: first assembly against arenafem's repeated one | {first:.0f} ms | "
      f"({again:.0f} ms repeated) | {first / again:.2f} |")
print()
print("| SpMV | bytes moved | 1 thread | % of STREAM (1 thread) | 2 threads | % of STREAM (2 threads) |")
print("|---|---|---|---|---|---|")
for mesh, tag in (("2D 1024² grid", "Grid"), ("3D 100³ hexes", "Hex")):
    one = ours[f"BM_Spmv{tag}Q1/1"]
    two = ours[f"BM_Spmv{tag}Q1/2"]
    print(f"| {mesh} | {one['bytes_per_spmv'] / 1e6:.0f} MB | {one['bytes/s'] / 1e9:.1f} GB/s | "
          f"{100 * one['bytes/s'] / 1e9 / stream[1]:.0f} % | {two['bytes/s'] / 1e9:.1f} GB/s | "
          f"{100 * two['bytes/s'] / 1e9 / stream[2]:.0f} % |")
print()
print(f"STREAM triad: {stream[1]:.1f} GB/s (1 thread), {stream[2]:.1f} GB/s (2 threads).")
EOF
