#!/usr/bin/env bash
# Strong and weak scaling of the distributed layer on this machine, 1 and 2 MPI ranks with one
# OpenMP thread each:
# - FEM (bench/distributed_scaling): the Q1 Laplacian (plus mass) on the unit square (1024², 1M
#   dofs) and cube (100³), and for weak scaling a 724² square per rank (stretched along x);
# - MPM (bench/mpm_scaling): the sand column in 2D (256², 24k particles, Q1 and B-splines) and 3D
#   (64³), and for weak scaling one 2D dam break of 128² per rank, stacked along y (its water
#   costs the same per particle whether it falls or rests; the sand's return mapping does not).
# Prints Markdown tables of the slowest rank's medians and leaves the raw lines in
# build/bench-mpi/.
#
#   scripts/bench-mpi.sh
#
# The machine has 2 cores and is shared: compare the ratios of one run, not the bare figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench-mpi
mkdir -p "$out"
cmake --preset release >/dev/null
cmake --build --preset release --target distributed_scaling mpm_scaling -j "$(nproc)" >/dev/null
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

run() {  # program label ranks args...
  local program=$1 label=$2 ranks=$3
  shift 3
  mpirun -np "$ranks" "build/release/bench/$program" "$@" | tee -a "$out/$label.jsonl"
}
for label in strong_2d strong_3d weak_2d mpm_strong_2d mpm_strong_2d_bspline mpm_strong_3d \
             mpm_weak_2d; do
  : >"$out/$label.jsonl"
done
for ranks in 1 2; do
  run distributed_scaling strong_2d "$ranks" --dim 2 --resolution 1024 --repeat 5
  run distributed_scaling strong_3d "$ranks" --dim 3 --resolution 100 --repeat 5
  run distributed_scaling weak_2d "$ranks" --dim 2 --resolution 724 --stretch "$ranks" --repeat 5
  run mpm_scaling mpm_strong_2d "$ranks" --resolution 256
  run mpm_scaling mpm_strong_2d_bspline "$ranks" --resolution 256 --basis bspline2
  run mpm_scaling mpm_strong_3d "$ranks" --dim 3 --resolution 64 --blocks 5 --block-steps 5
  run mpm_scaling mpm_weak_2d "$ranks" --scene dam_break --resolution 128 --stretch "$ranks"
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
print("\n| MPM problem | ranks | particles | most on a rank | border bytes / step | particles moved / step | step ms | 1 rank: plain Simulation step ms |")
print("|---|---|---|---|---|---|---|---|")
for label in ("mpm_strong_2d", "mpm_strong_2d_bspline", "mpm_strong_3d", "mpm_weak_2d"):
    rows = [json.loads(line) for line in (out / f"{label}.jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        serial = f"{1e3 * r['serial_step_s']:.2f}" if r['ranks'] == 1 else ""
        print(f"| {label} | {r['ranks']} | {r['particles']} | {r['most_particles_on_a_rank']} | "
              f"{r['border_bytes_per_step']} | {r['particles_moved_per_step']:.1f} | {1e3 * r['step_s']:.2f} | {serial} |")
    if len(rows) == 2:
        a, b = rows
        kind = "speed-up" if "strong" in label else "efficiency (time 1 rank / time 2 ranks)"
        print(f"| {label} {kind} | | | | | | {a['step_s'] / b['step_s']:.2f} | |")
PY
