#!/usr/bin/env bash
# Strong and weak scaling of the distributed layer on this machine, 1 and 2 MPI ranks with one
# OpenMP thread each: the Q1 Laplacian (plus mass) on the unit square (1024², 1M dofs) and cube
# (100³), and for weak scaling a 724² square per rank (stretched along x with the ranks). Prints
# a Markdown table of the slowest rank's medians (bench/distributed_scaling) and leaves the raw
# lines in build/bench-mpi/.
#
#   scripts/bench-mpi.sh
#
# The machine has 2 cores and is shared: compare the ratios of one run, not the bare figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench-mpi
mkdir -p "$out"
cmake --preset release >/dev/null
cmake --build --preset release --target distributed_scaling -j "$(nproc)" >/dev/null
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

run() {  # label ranks args...
  local label=$1 ranks=$2
  shift 2
  mpirun -np "$ranks" build/release/bench/distributed_scaling "$@" | tee -a "$out/$label.jsonl"
}
: >"$out/strong_2d.jsonl"; : >"$out/strong_3d.jsonl"; : >"$out/weak_2d.jsonl"
for ranks in 1 2; do
  run strong_2d "$ranks" --dim 2 --resolution 1024 --repeat 5
  run strong_3d "$ranks" --dim 3 --resolution 100 --repeat 5
  run weak_2d "$ranks" --dim 2 --resolution 724 --stretch "$ranks" --repeat 5
done

python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
print("\n| problem | ranks | dofs | halo bytes / product | repeated assembly s | SpMV ms | CG iteration ms | CG iterations |")
print("|---|---|---|---|---|---|---|---|")
for label in ("strong_2d", "strong_3d", "weak_2d"):
    rows = [json.loads(line) for line in (out / f"{label}.jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        print(f"| {label} | {r['ranks']} | {r['dofs']} | {r['halo_bytes_per_product']} | "
              f"{r['assembly_s']:.3f} | {1e3 * r['spmv_s']:.2f} | {1e3 * r['cg_iteration_s']:.2f} | {r['cg_iterations']} |")
    if len(rows) == 2:
        a, b = rows
        kind = "speed-up" if label.startswith("strong") else "efficiency (time 1 rank / time 2 ranks)"
        print(f"| {label} {kind} | | | | {a['assembly_s'] / b['assembly_s']:.2f} | "
              f"{a['spmv_s'] / b['spmv_s']:.2f} | {a['cg_iteration_s'] / b['cg_iteration_s']:.2f} | |")
PY
