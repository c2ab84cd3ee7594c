#!/usr/bin/env bash
# The incompressible fluid end to end: apic_fluid's default scene (the dam break, 128² in 2D,
# 40³ in 3D) run with its pressure solve preconditioned by the multigrid and by Jacobi, one
# thread, side by side. Prints a Markdown table (median seconds, CG iterations of the last step,
# ratio).
#
#   scripts/bench-fluid.sh [STEPS_2D] [STEPS_3D] [OTHER]
#
# STEPS_2D (default 2000, the program's default run) and STEPS_3D (default 200) are the steps of
# each run. OTHER, an apic_fluid binary of another build (an older commit), adds its runs with
# its own default solve. ROUNDS (environment, default 3) rounds run every configuration in turn;
# the table holds each one's median. The machine is shared: compare the ratios, not the bare
# figures.
set -euo pipefail
cd "$(dirname "$0")/.."
steps2=${1:-2000}
steps3=${2:-200}
other=${3:-}
rounds=${ROUNDS:-3}

cmake --preset release >/dev/null
cmake --build --preset release --target apic_fluid -j "$(nproc)" >/dev/null

seconds() {  # binary, arguments...: the run's seconds and the last step's CG iterations
  local log
  log=$(OMP_NUM_THREADS=1 script -qc "$*" /dev/null | tr '\r' '\n')
  local time iterations
  time=$(grep -o 'in [0-9.]* s' <<<"$log" | tail -1 | cut -d' ' -f2)
  iterations=$(grep -o 'CG [0-9]* iterations' <<<"$log" | tail -1 | cut -d' ' -f2)
  echo "$time ${iterations:-?}"
}
median() { tr ' ' '\n' <<<"$*" | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "| scene | steps | solve | seconds (median of $rounds) | CG iterations (last step) | time / multigrid's |"
echo "|---|---|---|---|---|---|"
for dim in 2 3; do
  steps=$([ "$dim" = 2 ] && echo "$steps2" || echo "$steps3")
  run="--dim $dim --steps $steps --every 10"
  names=(multigrid Jacobi)
  commands=("build/release/apps/apic_fluid $run --preconditioner multigrid"
            "build/release/apps/apic_fluid $run --preconditioner jacobi")
  if [ -n "$other" ]; then
    names+=("$other")
    commands+=("$other $run")
  fi
  declare -a times=() its=()
  for ((r = 0; r < rounds; ++r)); do
    for i in "${!commands[@]}"; do
      read -r t n < <(seconds "${commands[$i]}")
      times[i]="${times[i]:-} $t"
      its[i]=$n
    done
  done
  mg=$(median "${times[0]}")
  for i in "${!commands[@]}"; do
    m=$(median "${times[$i]}")
    echo "| dam break ${dim}D | $steps | ${names[$i]} | $m | ${its[$i]} | $(awk "BEGIN{printf \"%.2f\", $m/$mg}") |"
  done
  unset times its
done
