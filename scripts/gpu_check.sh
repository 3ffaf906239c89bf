#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (made for an H200, sm_90): builds gattn with CUDA
# into build-gpu/, runs the GPU tests (ctest -L gpu), the CUDA op benchmark, the NCCL communicator
# under mpirun -n 1, gattn's attention op against PyTorch (benchmarks/scripts/attention_torch.py) and
# GPT-2 124M-shaped training runs in bf16 and fp32 (tokens/s, MFU), and copies every log to $OUT
# (when set; else gpu_check_logs/ in the repository), with the data-parallel trainer's check in
# between (tests/emulation/dist_on_device.sh). Everything after the build and the tests runs
# against a deadline of 330 s from the start (GATTN_CHECK_BUDGET_S), each step's timeout cut to what
# is left: with a machine start (1-4 min) the first run fits 6 minutes of a 15-minute device budget,
# and a rerun on the warm machine (build-gpu/ is kept there, so the build is incremental) fits 3
# with GATTN_CHECK_BUDGET_S=150. The tests' own timeouts are cut to the deadline too, so a hung test
# cannot eat the rest.
#
#   scripts/gpu_check.sh                               # arch 90, first run
#   GATTN_CHECK_BUDGET_S=150 scripts/gpu_check.sh      # the rerun on the warm machine
#   GATTN_CUDA_ARCH=80 scripts/gpu_check.sh
#
# Exit status: 0 when the build and every GPU test pass, 1 when a test fails, 2 when the build fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

logs="${OUT:-$root/gpu_check_logs}"
mkdir -p "$logs"
arch="${GATTN_CUDA_ARCH:-90}"
jobs="$(nproc)"
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start ))s"; }
deadline=$(( start + ${GATTN_CHECK_BUDGET_S:-330} ))
# The timeout for a step that would like CAP seconds: no more than what is left before the deadline
# (minus RESERVE seconds kept for the steps after it); 0 means skip the step.
step_timeout() {  # CAP RESERVE
  local left=$(( deadline - $(date +%s) - $2 ))
  if (( left < 20 )); then echo 0; elif (( left < $1 )); then echo "$left"; else echo "$1"; fi
}

echo "gpu_check: logs go to $logs"
{ nvidia-smi || echo "nvidia-smi failed"; } >"$logs/nvidia-smi.txt" 2>&1
head -15 "$logs/nvidia-smi.txt"

# The GPU machine's image has CUDA, CMake, ninja and PyTorch but not the Debian libraries gattn
# builds against, and nothing can be fetched there: scripts/gpu_deps.sh downloads them here as .deb
# files into .gpu_deps/ (git-ignored: the device tool's run must name it in `carry`), and they are
# unpacked into a prefix. OpenMPI is not among them (its dependencies are large): without it the
# build leaves out multi-process runs and the mpirun step below is skipped.
prefix_args=()
if [[ -d .gpu_deps ]] && ls .gpu_deps/*.deb >/dev/null 2>&1; then
  deps=/tmp/gattn_deps
  mkdir -p "$deps"
  unpack_deb() {  # dpkg-deb where the image has it, else the .deb's ar members by hand
    if command -v dpkg-deb >/dev/null 2>&1; then dpkg-deb -x "$1" "$deps"; return; fi
    local member; member=$(ar t "$1" | grep '^data\.tar')
    case "$member" in
      *.xz) ar p "$1" "$member" | tar -xJ -C "$deps" ;;
      *.zst) ar p "$1" "$member" | zstd -dc | tar -x -C "$deps" ;;
      *) ar p "$1" "$member" | tar -x -C "$deps" ;;
    esac
  }
  for f in .gpu_deps/*.deb; do unpack_deb "$f" || echo "gpu_check: could not unpack $f"; done
  multiarch=x86_64-linux-gnu
  # The binaries get these directories as RUNPATH from CMake; LD_LIBRARY_PATH also serves the
  # libraries' own dependencies (OpenBLAS → libgfortran).
  export LD_LIBRARY_PATH="$deps/usr/lib/$multiarch:$deps/usr/lib/$multiarch/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  prefix_args=(-DCMAKE_PREFIX_PATH="$deps/usr")
  echo "gpu_check: using the carried Debian libraries unpacked into $deps"
  # The carried libraries are Debian 12's: libgfortran5 needs glibc >= 2.34 and libbenchmark the
  # GLIBCXX_3.4.30 of GCC 12's libstdc++. An older image would end in a wall of link errors; one
  # line instead, before any build time is spent.
  glibc=$(ldd --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  if [[ -z $glibc ]] || ! printf '2.34\n%s\n' "$glibc" | sort -V -C; then
    echo "gpu_check: this image's glibc is ${glibc:-unknown}; the carried Debian 12 libraries need >= 2.34 (install the build dependencies on the image instead)"
    exit 2
  fi
  libstdcxx=$(g++ -print-file-name=libstdc++.so.6 2>/dev/null)
  if [[ -f $libstdcxx ]] && ! grep -q GLIBCXX_3.4.30 "$libstdcxx"; then
    echo "gpu_check: $libstdcxx lacks GLIBCXX_3.4.30 (GCC >= 12 needed by the carried Google Benchmark): the benchmark is left out"
    no_benchmark=1
  fi
fi

echo "gpu_check: configure (CUDA on, arch $arch) [$(elapsed)]"
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f build-gpu/CMakeCache.txt ]]; then generator=(-G Ninja); fi
# Warnings are errors in CI here; on the GPU machine another compiler may warn differently, and a
# failed build there would waste the device run.
configure() {
  cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGATTN_WERROR=OFF -DGATTN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGATTN_BUILD_BENCHMARKS="$1" "${prefix_args[@]}" >"$logs/configure.log" 2>&1
}
bench_on=ON
if [[ ${no_benchmark:-0} == 1 ]]; then bench_on=OFF; fi
if ! configure "$bench_on"; then
  # Google Benchmark may be missing on the GPU machine: the tests matter more than the benchmark.
  echo "gpu_check: configure with benchmarks failed; retrying without them (the benchmark is skipped)"
  bench_on=OFF
  if ! configure OFF; then
    tail -30 "$logs/configure.log"
    echo "gpu_check: configure failed (log: $logs/configure.log)"
    exit 2
  fi
fi

# The tests and the binary first: a benchmark that fails to link (e.g. a libbenchmark needing a
# newer libstdc++) must not stop the run before ctest.
echo "gpu_check: build gattn_gpu_tests and gattn with -j$jobs [$(elapsed)]"
if ! cmake --build build-gpu -j "$jobs" --target gattn_gpu_tests gattn >"$logs/build.log" 2>&1; then
  grep -n -m 20 -E "error|Error" "$logs/build.log"
  echo "gpu_check: build failed (log: $logs/build.log)"
  exit 2
fi

# Each test may take at most what is left (keeping 60 s for the steps after), and ctest as a whole
# the same; a hung test is reported as a timeout instead of eating the device time.
test_limit=$(step_timeout 240 60)
if (( test_limit == 0 )); then test_limit=20; fi
echo "gpu_check: ctest -L gpu (per-test and total limit ${test_limit}s) [$(elapsed)]"
(cd build-gpu && timeout "$test_limit" ctest -L gpu --output-on-failure -j 4 --timeout "$test_limit") >"$logs/ctest_gpu.log" 2>&1
test_status=$?
if [[ $test_status -eq 124 ]]; then echo "gpu_check: ctest stopped by its ${test_limit}s limit"; fi

if [[ $bench_on == ON ]] && ! cmake --build build-gpu -j "$jobs" --target gattn_bench_cuda_ops >>"$logs/build.log" 2>&1; then
  echo "gpu_check: the CUDA op benchmark did not build (log: $logs/build.log); skipped"
fi
tail -25 "$logs/ctest_gpu.log"
# A skip here means the device was not usable: say so loudly rather than report a silent pass.
if grep -q "no CUDA device" "$logs/ctest_gpu.log"; then echo "gpu_check: WARNING: tests skipped with 'no CUDA device'"; fi

bench_ops_limit=$(step_timeout 60 200)
if [[ -x build-gpu/benchmarks/gattn_bench_cuda_ops ]] && (( bench_ops_limit > 0 )); then
  echo "gpu_check: CUDA op benchmark (GPT-2 124M shapes) [$(elapsed)]"
  timeout "$bench_ops_limit" build-gpu/benchmarks/gattn_bench_cuda_ops --benchmark_min_time=0.2 >"$logs/bench_cuda_ops.log" 2>&1 ||
    echo "gpu_check: the benchmark failed or timed out (log: $logs/bench_cuda_ops.log)"
  cat "$logs/bench_cuda_ops.log"
fi

# NCCL as a world of one under mpirun (docs/distributed-and-gpu.md; 2-rank NCCL needs two GPUs).
if command -v mpirun >/dev/null 2>&1; then
  echo "gpu_check: NCCL communicator under mpirun -n 1 [$(elapsed)]"
  root_flag=(); if [[ $(id -u) -eq 0 ]]; then root_flag=(--allow-run-as-root); fi
  timeout "$(( $(step_timeout 120 150) > 0 ? $(step_timeout 120 150) : 20 ))" mpirun -n 1 "${root_flag[@]}" --oversubscribe --bind-to none build-gpu/tests/gattn_gpu_tests \
    --gtest_filter='NcclCommunicator.*' >"$logs/nccl_mpirun.log" 2>&1 || { echo "gpu_check: NCCL under mpirun FAILED"; test_status=1; }
  tail -5 "$logs/nccl_mpirun.log"
fi

# The data-parallel trainer on the GPU (tests/emulation/dist_on_device.sh, which the emulation
# build also runs on the CPU): an NCCL world of one equal to the plain single-GPU run and, where
# mpirun exists, 2 ranks sharing GPU 0 through the staged MPI backend equal to 1 rank on the same
# global batch (dist.zero 0 and 1, losses to 1e-5 over 20 steps), bf16 buckets, a 2-rank GPU
# checkpoint resumed on 1 rank, and nccl refused for 2 ranks on one GPU. Tiny model: ~1 min.
dist_limit=$(step_timeout 90 150)
if (( dist_limit > 0 )) && [[ -x build-gpu/gattn ]]; then
  echo "gpu_check: data-parallel trainer on the GPU [$(elapsed)]"
  timeout "$dist_limit" bash tests/emulation/dist_on_device.sh "$root/build-gpu/gattn" >"$logs/dist_on_device.log" 2>&1 || { echo "gpu_check: data-parallel trainer on the GPU FAILED"; test_status=1; }
  tail -5 "$logs/dist_on_device.log"
else
  echo "gpu_check: skipped the data-parallel trainer check (past the deadline)"
fi

# gattn's attention op against PyTorch on the shapes of docs/benchmarks.md (16k tokens per case, T 1k/4k/16k,
# 16x64 and 8x128, bf16): flash SDPA for none/output, the eager formula for score/forget/pair. The
# script splits its own budget (gattn 45 %, then PyTorch 30 % of the step's; unfinished cases are marked, an eager
# case over 2 s per iteration is reported from that one iteration) so the outer timeout only catches a
# hang. A failure here is reported, not counted as a test failure: the numbers are goals, not
# correctness.
echo "gpu_check: attention benchmark, gattn vs PyTorch [$(elapsed)]"
bench_limit=$(step_timeout 150 150)  # keeps 150 s for the GPT runs
if (( bench_limit == 0 )); then
  echo "gpu_check: skipped the attention benchmark (past the deadline)"
elif cmake --build build-gpu -j "$jobs" --target gattn >>"$logs/build.log" 2>&1; then
  timeout "$bench_limit" python3 benchmarks/scripts/attention_torch.py --gattn "$root/build-gpu/gattn" --device cuda --dtype bf16 \
    --T 1024,4096,16384 --heads-dim 16x64,8x128 --tokens 16384 --warmup 2 --iters 5 --max-iter-s 2 \
    --gattn-timeout $(( bench_limit * 45 / 100 )) --torch-budget $(( bench_limit * 30 / 100 )) --out "$logs/bench_attention.md" >"$logs/bench_attention.log" 2>&1 ||
    echo "gpu_check: the attention benchmark failed or timed out (log: $logs/bench_attention.log)"
  if [[ -s $logs/bench_attention.md ]]; then cat "$logs/bench_attention.md"; else tail -20 "$logs/bench_attention.log"; fi
else
  echo "gpu_check: building gattn FAILED (log: $logs/build.log)"; test_status=1
fi

# The GPT-2 124M shape (configs/gpt2_124m.yaml: 12 layers, 768 wide, T = 1024, output gates) on
# synthetic tokens, one micro-batch per step:
#  - bf16 mixed precision, 200 steps of 16 sequences: the tokens/s and MFU (attention in the
#    fused kernel; GEMMs on bf16 tensor cores), against the H200's dense bf16 peak of 989 TFLOP/s;
#  - fp32 (TF32 GEMMs, composed attention, which stores several B·H·T·T score tensors per layer:
#    8 sequences keep them near 25 GB), 60 steps if time is left, against the TF32 peak of 494.
# Tokens/s is the median of the logged rates after step 20 (10 for the short run); MFU counts
# 6·N + 6·L·T·C FLOPs per token (PaLM's formula with causal attention's half).
run_gpt2_shape() {  # NAME PRECISION BATCH STEPS PEAK_TFLOPS TIMEOUT_S
  local name=$1 precision=$2 batch=$3 steps=$4 peak=$5 limit=$6
  echo "gpu_check: $steps-step gpt2_124m-shaped run, $precision, batch $batch [$(elapsed)]"
  rm -rf "build-gpu/$name"
  timeout "$limit" build-gpu/gattn train --config configs/gpt2_124m.yaml device=cuda train.precision="$precision" \
    data.kind=synthetic data.task=copy data.vocab_size=50304 train.batch_size="$batch" train.grad_accum=1 \
    train.max_steps="$steps" train.log_every=10 eval.every=0 eval.max_windows=4 checkpoint.every=0 \
    run.dir="build-gpu/$name" >"$logs/train_$name.log" 2>&1
  local status=$?
  tail -5 "$logs/train_$name.log"
  if [[ $status -eq 124 && -s build-gpu/$name/metrics.jsonl ]]; then
    echo "gpu_check: the $precision run was stopped by its $limit s limit (its logged steps are measured below)"
  elif [[ $status -ne 0 ]]; then echo "gpu_check: the $precision training run FAILED (exit $status)"; test_status=1; fi
  cp "build-gpu/$name/metrics.jsonl" "$logs/${name}_metrics.jsonl" 2>/dev/null
  python3 - "$logs/${name}_metrics.jsonl" "$logs/train_$name.log" "$precision" "$peak" <<'PY' || true
import json, re, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
N = int(re.search(r"(\d+) parameters", open(sys.argv[2]).read()).group(1))  # "gattn train: N parameters"
precision, peak = sys.argv[3], float(sys.argv[4])
train = [l for l in lines if l["split"] == "train"]
skip = 20 if train[-1]["step"] > 100 else 10
timed = [l for l in train if l["step"] > skip] or train
rate = statistics.median(l["tokens_per_s"] for l in timed)
L, T, C = 12, 1024, 768
flops = (6 * N + 6 * L * T * C) * rate
print(f"gpu_check: gpt2_124m shape, {precision}: {rate:,.0f} tokens/s, {flops / 1e12:.1f} TFLOP/s, "
      f"MFU {100 * flops / (peak * 1e12):.1f}% of the {peak:.0f} TFLOP/s peak; "
      f"loss {train[0]['loss']:.3f} -> {train[-1]['loss']:.3f}")
PY
}
if cmake --build build-gpu -j "$jobs" --target gattn >>"$logs/build.log" 2>&1; then
  limit=$(step_timeout 180 40)
  if (( limit > 0 )); then run_gpt2_shape gpt2_bf16 bf16 16 200 989 "$limit"
  else echo "gpu_check: skipped the bf16 GPT run (past the deadline)"; fi
  limit=$(step_timeout 90 0)
  if (( limit > 0 )); then run_gpt2_shape gpt2_fp32 fp32 8 60 494 "$limit"
  else echo "gpu_check: skipped the fp32 GPT run (past the deadline)"; fi
else
  echo "gpu_check: building gattn FAILED (log: $logs/build.log)"; test_status=1
fi

echo "gpu_check: done in $(elapsed); ctest exit status $test_status; logs in $logs"
if [[ $test_status -ne 0 ]]; then exit 1; fi
exit 0
