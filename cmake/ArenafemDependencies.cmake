# Finds what every arenafem target needs: the CCCL headers (Thrust, CUB, libcu++) from the CUDA
# toolkit, OpenMP for the CPU backend, and the CUDA runtime for the CUDA backend.

find_package(CUDAToolkit QUIET)
find_path(ARENAFEM_CCCL_INCLUDE_DIR thrust/version.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS}/cccl ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include/cccl
        $ENV{CUDA_PATH}/include/cccl
  DOC "Directory holding thrust/, cub/ and cuda/ (the CUDA toolkit's include/cccl)"
  NO_DEFAULT_PATH)
if(NOT ARENAFEM_CCCL_INCLUDE_DIR)
  message(FATAL_ERROR
    "arenafem: Thrust/CUB headers not found. Install the CUDA toolkit (its include/cccl holds "
    "them) or set ARENAFEM_CCCL_INCLUDE_DIR to the folder that contains thrust/version.h.")
endif()

if(ARENAFEM_OPENMP AND NOT ARENAFEM_CUDA)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
endif()
if(ARENAFEM_CUDA AND NOT TARGET CUDA::cudart)
  message(FATAL_ERROR "arenafem: ARENAFEM_CUDA=ON but the CUDA runtime (CUDA::cudart) was not found")
endif()

# Small dense vectors and matrices (Jacobians, normals) in host and device code.
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(Threads REQUIRED)

# The distributed layer: MPI (Debian's libopenmpi-dev) and METIS (libmetis-dev, which installs no
# CMake package: its header and library are looked up by name).
if(ARENAFEM_MPI)
  if(ARENAFEM_CUDA)
    message(FATAL_ERROR "arenafem: ARENAFEM_MPI is for the CPU backend; build it without ARENAFEM_CUDA")
  endif()
  find_package(MPI REQUIRED COMPONENTS CXX)
  find_path(ARENAFEM_METIS_INCLUDE_DIR metis.h DOC "Directory holding metis.h (libmetis-dev)")
  find_library(ARENAFEM_METIS_LIBRARY metis DOC "The METIS library (libmetis-dev)")
  if(NOT ARENAFEM_METIS_INCLUDE_DIR OR NOT ARENAFEM_METIS_LIBRARY)
    message(FATAL_ERROR "arenafem: ARENAFEM_MPI needs METIS: install libmetis-dev")
  endif()
endif()
