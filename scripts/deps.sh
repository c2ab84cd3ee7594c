#!/usr/bin/env bash
# Installs the Debian packages arenafem builds with, when they are missing, and checks that the
# CUDA toolkit (nvcc and its include/cccl headers) is on the machine.
set -euo pipefail

packages=(cmake ninja-build g++ ccache clang clang-format clang-tidy libclang-rt-14-dev git libeigen3-dev libgtest-dev
  libbenchmark-dev libopenmpi-dev openmpi-bin libmetis-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "deps: missing ${missing[*]}; run as root or install sudo" >&2
      exit 1
    }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "deps: nvcc not found; install the CUDA toolkit (13.x) or put its bin/ on PATH" >&2
  exit 1
fi
