#!/usr/bin/env bash
# Builds arenafem and passes all of its tests: the release build and its tests, clang-tidy and
# clang-format over the sources, the AddressSanitizer + UndefinedBehaviorSanitizer build and its
# tests, a short libFuzzer run of each fuzz target, and the CUDA backend compiled with nvcc
# (sm_80, sm_90; in fast-compile mode where no GPU is present). The CUDA tests also run when a GPU
# is present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
jobs=$(nproc)

step() { printf '\n=== %s (%s) ===\n' "$*" "$(date +%T)"; }

step "release: build and test"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

step "clang-tidy (checks in .clang-tidy) and clang-format"
git ls-files '*.cpp' ':!tests/embed/*' ':!tests/fem/compile_fail/*' ':!tests/fuzz/fuzz_*.cpp' | xargs -P "$jobs" -n 2 clang-tidy -p build/release --quiet
git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror

step "asan-ubsan: build and test"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "$jobs"
ctest --preset asan-ubsan -j "$jobs"

step "fuzz: libFuzzer on the Gmsh reader and the MPM command line, 30 s each"
scripts/fuzz.sh 30

step "cuda: compile with nvcc"
if nvidia-smi -L >/dev/null 2>&1; then
  cmake --preset cuda -DCMAKE_CUDA_FLAGS="" -DCMAKE_CUDA_FLAGS_RELEASE="-O3 -DNDEBUG" >/dev/null
  cmake --build --preset cuda -j "$jobs"
  step "cuda: test on the GPU"
  ctest --test-dir build/cuda --output-on-failure -j "$jobs"
else
  # Nothing to run it on: check that every CUDA translation unit compiles and links for sm_80 and
  # sm_90, with nvcc's fast-compile mode for device code and host code at -O1 (GCC's
  # maybe-uninitialized, which depends on the optimisation level and misfires on CUB's dispatch at
  # -O1, is left to the full build). The device code goes through the front end once, for
  # compute_80 (no code here depends on __CUDA_ARCH__ >= 900), and ptxas makes the machine code of
  # both sm_80 and sm_90 from it: 17 % less time per translation unit than a front-end pass per
  # architecture, about half the full build's time in all.
  cmake --preset cuda -DCMAKE_CUDA_ARCHITECTURES=OFF \
    -DCMAKE_CUDA_FLAGS="--generate-code=arch=compute_80,code=[compute_80,sm_80,sm_90]" \
    -DCMAKE_CUDA_FLAGS_RELEASE="-O1 -DNDEBUG -Ofc=max -Xcompiler=-Wno-maybe-uninitialized" \
    >/dev/null
  cmake --build --preset cuda -j "$jobs"
  echo "no GPU here: the CUDA build was compiled and linked (fast-compile), not run"
fi

step "all tests passed"
