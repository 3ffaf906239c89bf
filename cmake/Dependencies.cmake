# Finds gattn's dependencies: all Debian packages (scripts/setup.sh installs them) plus the
# machine's CUDA toolkit in its standard place.

find_package(OpenMP REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(ZLIB REQUIRED)  # crc32_z for the checkpoint checksums
find_package(CLI11 CONFIG REQUIRED)
# nlohmann-json (header-only): its own directory, so a prefix install is found too.
find_path(GATTN_JSON_INCLUDE nlohmann/json.hpp)
if(NOT GATTN_JSON_INCLUDE)
  message(FATAL_ERROR "nlohmann/json.hpp not found: run ./scripts/setup.sh (installs nlohmann-json3-dev)")
endif()
# MPI (Debian's OpenMPI): launches and connects the ranks of a multi-process run, carries CPU
# gradients and bootstraps NCCL. gattn calls only its C API (the C++ bindings are deprecated).
# Without it (a GPU image that lacks it) gattn still builds: single-process runs work, and a
# launched multi-rank run stops with one line saying the build has no MPI.
find_package(MPI COMPONENTS CXX)
set(GATTN_WITH_MPI ${MPI_CXX_FOUND})
if(NOT GATTN_WITH_MPI)
  message(WARNING "gattn: MPI not found: multi-process runs are disabled (./scripts/setup.sh installs OpenMPI)")
endif()

# SentencePiece (Debian's libsentencepiece-dev): `gattn tokenize` trains and applies subword
# tokenizers with it, and token-shard runs encode and decode text through the tokenizer they were
# made with. OpenSSL's libcrypto: the tokenizer's SHA-256 and the base64 that carries it in a
# checkpoint's metadata.
find_path(GATTN_SENTENCEPIECE_INCLUDE sentencepiece_processor.h)
find_library(GATTN_SENTENCEPIECE_LIB NAMES sentencepiece)
find_library(GATTN_SENTENCEPIECE_TRAIN_LIB NAMES sentencepiece_train)
if(NOT GATTN_SENTENCEPIECE_INCLUDE OR NOT GATTN_SENTENCEPIECE_LIB OR NOT GATTN_SENTENCEPIECE_TRAIN_LIB)
  message(FATAL_ERROR "SentencePiece not found: run ./scripts/setup.sh (installs libsentencepiece-dev)")
endif()
add_library(gattn::sentencepiece INTERFACE IMPORTED)
target_link_libraries(gattn::sentencepiece INTERFACE ${GATTN_SENTENCEPIECE_TRAIN_LIB} ${GATTN_SENTENCEPIECE_LIB})
target_include_directories(gattn::sentencepiece SYSTEM INTERFACE ${GATTN_SENTENCEPIECE_INCLUDE})
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# Hugging Face tokenizers (framework/text/hf_*): PCRE2 (Debian's libpcre2-dev) compiles their
# pre-tokenizer regexes with Unicode properties; ICU (libicu-dev) normalizes text to NFC (Qwen's
# normalizer) and classifies characters for the added tokens' strip rules.
find_package(PkgConfig REQUIRED)
pkg_check_modules(GATTN_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
find_package(ICU REQUIRED COMPONENTS uc)

# OpenBLAS: prefer Debian's OpenMP build so BLAS and our own OpenMP loops share one thread pool
# (the pthread build would oversubscribe the cores when both run).
find_path(GATTN_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-openmp)
# The OpenMP build's directory under each CMAKE_PREFIX_PATH entry first (Debian packages unpacked
# into a prefix: scripts/gpu_deps.sh), then the system's.
set(GATTN_OPENBLAS_HINTS)
foreach(prefix ${CMAKE_PREFIX_PATH})
  list(APPEND GATTN_OPENBLAS_HINTS ${prefix}/lib/x86_64-linux-gnu/openblas-openmp ${prefix}/lib/aarch64-linux-gnu/openblas-openmp)
endforeach()
find_library(GATTN_OPENBLAS_LIB NAMES openblas
  HINTS ${GATTN_OPENBLAS_HINTS} /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
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

# oneDNN: f32 GEMMs go through its dnnl_sgemm when it is there (Debian's libdnnl-dev, OpenMP
# runtime, so it shares the one thread pool). On the model's small shapes it runs at 90% of the
# FMA peak on 2 cores where OpenBLAS reaches 64% (docs/benchmarks.md, "GEMM libraries"). Without it
# f32 stays on OpenBLAS; f64 (the gradchecks) always does.
option(GATTN_DNNL "f32 GEMMs through oneDNN when it is installed" ON)
set(GATTN_WITH_DNNL OFF)
if(GATTN_DNNL)
  find_path(GATTN_DNNL_INCLUDE dnnl.h PATH_SUFFIXES oneapi/dnnl)
  find_library(GATTN_DNNL_LIB NAMES dnnl)
  if(GATTN_DNNL_INCLUDE AND GATTN_DNNL_LIB)
    set(GATTN_WITH_DNNL ON)
    add_library(gattn::dnnl INTERFACE IMPORTED)
    target_link_libraries(gattn::dnnl INTERFACE ${GATTN_DNNL_LIB})
    target_include_directories(gattn::dnnl SYSTEM INTERFACE ${GATTN_DNNL_INCLUDE})
    target_compile_definitions(gattn::dnnl INTERFACE GATTN_WITH_DNNL=1)
    message(STATUS "gattn: oneDNN ${GATTN_DNNL_LIB} (f32 GEMMs)")
  else()
    message(WARNING "gattn: oneDNN not found: f32 GEMMs use OpenBLAS, ~30% slower at 2 threads "
                    "(./scripts/setup.sh installs libdnnl-dev)")
  endif()
endif()

# CUDA: AUTO compiles it in whenever nvcc is found; GPU tests then skip at run time without a device.
# GATTN_CUDA_EMULATE instead compiles the CUDA sources with the host compiler against emulation/
# (the CUDA runtime, cuBLAS, cuBLASLt and one-rank NCCL over host memory, kernels on fibers): every
# CUDA code path runs on a machine without a GPU. It needs only the toolkit's headers.
set(GATTN_WITH_CUDA OFF)
set(GATTN_WITH_NCCL OFF)
if(GATTN_CUDA_EMULATE)
  find_path(GATTN_CUDA_INCLUDE cuda_runtime.h HINTS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
  if(NOT GATTN_CUDA_INCLUDE)
    message(FATAL_ERROR "GATTN_CUDA_EMULATE needs the CUDA toolkit's headers (cuda_runtime.h), not found")
  endif()
  set(GATTN_WITH_CUDA ON)
  if(EXISTS ${GATTN_CUDA_INCLUDE}/nccl.h AND NOT GATTN_NCCL STREQUAL "OFF")
    set(GATTN_WITH_NCCL ON)
  endif()
  message(STATUS "gattn: CUDA emulation over the headers in ${GATTN_CUDA_INCLUDE} (NCCL ${GATTN_WITH_NCCL})")
elseif(NOT GATTN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_80 (A100) and sm_90 (H100/H200): the GPUs gattn's kernels target. A machine without a
      # GPU (no /dev/nvidia0: CI and the development machines) only checks that the CUDA sources
      # compile and link, which one architecture shows at half the nvcc time.
      if(EXISTS /dev/nvidia0)
        set(CMAKE_CUDA_ARCHITECTURES 80 90)
      else()
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    # NCCL from the toolkit, the system, or PyTorch's pip wheel (nvidia-nccl-*, which ships only
    # libnccl.so.2): the GPU machines' images have the last.
    execute_process(COMMAND python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__path__[0] + '/'))"
      OUTPUT_VARIABLE GATTN_PIP_NCCL OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    find_library(GATTN_NCCL_LIB NAMES nccl libnccl.so.2
      HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu ${GATTN_PIP_NCCL}/lib)
    find_path(GATTN_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include ${GATTN_PIP_NCCL}/include)
    set(GATTN_WITH_NCCL OFF)
    if(GATTN_NCCL_LIB AND GATTN_NCCL_INCLUDE AND NOT GATTN_NCCL STREQUAL "OFF")
      set(GATTN_WITH_NCCL ON)
      add_library(gattn::nccl INTERFACE IMPORTED)
      target_link_libraries(gattn::nccl INTERFACE ${GATTN_NCCL_LIB})
      target_include_directories(gattn::nccl INTERFACE ${GATTN_NCCL_INCLUDE})
    else()
      message(WARNING "gattn: CUDA without NCCL (libnccl / nccl.h not found): the NCCL communicator is disabled")
    endif()
    set(GATTN_WITH_CUDA ON)
    message(STATUS "gattn: CUDA ${CUDAToolkit_VERSION}, NCCL ${GATTN_NCCL_LIB}")
  elseif(GATTN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GATTN_CUDA=ON but no CUDA compiler (nvcc) was found")
  else()
    message(STATUS "gattn: no nvcc, CPU-only build")
  endif()
endif()
