# Finds gattn's dependencies: all Debian packages (scripts/setup.sh installs them) plus the
# machine's CUDA toolkit in its standard place.

find_package(OpenMP REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# MPI (Debian's OpenMPI): launches and connects the ranks of a multi-process run, carries CPU
# gradients and bootstraps NCCL. gattn calls only its C API (the C++ bindings are deprecated).
find_package(MPI REQUIRED COMPONENTS CXX)

# OpenBLAS: prefer Debian's OpenMP build so BLAS and our own OpenMP loops share one thread pool
# (the pthread build would oversubscribe the cores when both run).
find_path(GATTN_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-openmp)
find_library(GATTN_OPENBLAS_LIB NAMES openblas
  HINTS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
if(NOT GATTN_OPENBLAS_LIB)
  find_library(GATTN_OPENBLAS_LIB NAMES openblas)
endif()
if(NOT GATTN_OPENBLAS_LIB OR NOT GATTN_CBLAS_INCLUDE)
  message(FATAL_ERROR "OpenBLAS not found: run ./scripts/setup.sh (installs libopenblas-openmp-dev)")
endif()
add_library(gattn::blas INTERFACE IMPORTED)
target_link_libraries(gattn::blas INTERFACE ${GATTN_OPENBLAS_LIB})
target_include_directories(gattn::blas INTERFACE ${GATTN_CBLAS_INCLUDE})
message(STATUS "gattn: OpenBLAS ${GATTN_OPENBLAS_LIB}")

# CUDA: AUTO compiles it in whenever nvcc is found; GPU tests then skip at run time without a device.
set(GATTN_WITH_CUDA OFF)
if(NOT GATTN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_80 (A100) and sm_90 (H100/H200): the GPUs gattn's kernels target.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_library(GATTN_NCCL_LIB NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
    find_path(GATTN_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
    if(NOT GATTN_NCCL_LIB OR NOT GATTN_NCCL_INCLUDE)
      message(FATAL_ERROR "CUDA toolkit found but NCCL is missing (libnccl / nccl.h)")
    endif()
    add_library(gattn::nccl INTERFACE IMPORTED)
    target_link_libraries(gattn::nccl INTERFACE ${GATTN_NCCL_LIB})
    target_include_directories(gattn::nccl INTERFACE ${GATTN_NCCL_INCLUDE})
    set(GATTN_WITH_CUDA ON)
    message(STATUS "gattn: CUDA ${CUDAToolkit_VERSION}, NCCL ${GATTN_NCCL_LIB}")
  elseif(GATTN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GATTN_CUDA=ON but no CUDA compiler (nvcc) was found")
  else()
    message(STATUS "gattn: no nvcc, CPU-only build")
  endif()
endif()
