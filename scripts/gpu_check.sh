#!/usr/bin/env bash
# The device check for a machine with an NVIDIA GPU (made for a 16-core H200 node, sm_90), sized to
# one short device run. From a clean checkout the default run configures and builds gattn_gpu_tests
# and gattn with CUDA into build-gpu/, runs the GPU tests (ctest -L gpu), a 2-rank staged-MPI
# training sharing GPU 0 against 1 rank on the same global batch (tests/emulation/dist_on_device.sh
# --quick), and 20 device steps of the GPT-2 124M shape, all within 270 s. The benchmarks (the CUDA
# op benchmark, gattn's attention against PyTorch, the bf16/fp32 GPT-2-shape throughput runs) are a
# run of their own, --bench, so a slow benchmark can never cost the correctness check.
#
#   scripts/gpu_check.sh            # the check (carry .gpu_deps, made by scripts/gpu_deps.sh)
#   scripts/gpu_check.sh --bench    # the benchmarks (a second run; build-gpu/ is reused when warm)
#   scripts/gpu_check.sh --plan     # the stages and their time limits, nothing run (with --bench: its plan)
#
# One deadline bounds the whole run, configure and build included: start + the sum of the stage
# limits (or GATTN_CHECK_BUDGET_S, e.g. less for a rerun on the warm machine, whose build is
# incremental). Each stage may run until the deadline less the limits of the stages after it, so
# every stage keeps at least its own limit and time a stage leaves unused goes to the next. A stage that cannot start (a failed prerequisite, nothing left) is "skipped".
#
# Results: $OUT/summary.json (else gpu_check_logs/ in the repository, with every log): the budget,
# each stage's limit, seconds, status (pass, fail, skipped) and note, the names of failing tests, and
# the overall result; rewritten after every stage, so a run killed from outside still leaves one.
# Exit status: 0 when every stage passed, 1 otherwise, 2 for a usage error.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

usage() {
  echo "usage: scripts/gpu_check.sh [--bench] [--plan]" >&2
  exit 2
}
mode=check
plan_only=0
for arg in "$@"; do
  case $arg in
    --bench) mode=bench ;;
    --plan) plan_only=1 ;;
    *) usage ;;
  esac
done

# The stages of each run: name, limit in seconds, what it does. The check's limits sum to 270 s
# (tests/integration/gpu_check_plan.sh holds them to that): the build of the two targets with
# nvcc on 16 cores takes the largest share.
check_stages=(
  "deps 10 unpack the carried Debian libraries and OpenMPI (.gpu_deps) into a prefix"
  "configure 20 cmake, CUDA on, arch sm_${GATTN_CUDA_ARCH:-90}, benchmarks off"
  "build 130 gattn_gpu_tests and gattn"
  "ctest 50 ctest -L gpu"
  "dist 30 2 ranks sharing GPU 0 (staged MPI) against 1 rank, and NCCL at world size 1"
  "gpt2 30 20 bf16 device steps of the GPT-2 124M shape"
)
bench_stages=(
  "deps 10 unpack the carried Debian libraries and OpenMPI (.gpu_deps) into a prefix"
  "configure 20 cmake, CUDA on, arch sm_${GATTN_CUDA_ARCH:-90}, benchmarks on"
  "build 150 gattn and gattn_bench_cuda_ops"
  "bench_ops 60 the CUDA op benchmark on GPT-2 124M shapes"
  "attention_torch 150 gattn's attention against PyTorch (benchmarks/scripts/attention_torch.py)"
  "gpt2_bf16 100 GPT-2 124M shape, bf16, 200 steps of 16 sequences: tokens/s and MFU"
  "gpt2_fp32 50 GPT-2 124M shape, fp32 (TF32), 60 steps of 8 sequences"
)
if [[ $mode == bench ]]; then stages=("${bench_stages[@]}"); else stages=("${check_stages[@]}"); fi
names=() limits=() about=()
for s in "${stages[@]}"; do
  read -r n l a <<<"$s"
  names+=("$n") limits+=("$l") about+=("$a")
done
planned=0
for l in "${limits[@]}"; do planned=$((planned + l)); done
budget="${GATTN_CHECK_BUDGET_S:-$planned}"

if ((plan_only)); then
  echo "gpu_check plan ($mode run, budget ${budget} s):"
  for i in "${!names[@]}"; do printf '  %-16s %4d s  %s\n' "${names[$i]}" "${limits[$i]}" "${about[$i]}"; done
  printf '  %-16s %4d s\n' total "$planned"
  exit 0
fi

logs="${OUT:-$root/gpu_check_logs}"
mkdir -p "$logs"
arch="${GATTN_CUDA_ARCH:-90}"
jobs="$(nproc)"
start=$(date +%s)
deadline=$((start + budget))
elapsed() { echo "$(($(date +%s) - start))s"; }

# ---- stage bookkeeping and summary.json ----

declare -A status seconds note
failing_tests=()
json_str() {  # a JSON string literal
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "${s//$'\n'/ }"
}
write_summary() {
  local overall=pass i n first=1
  {
    printf '{\n  "mode": "%s",\n  "budget_s": %d,\n  "elapsed_s": %d,\n  "stages": [\n' "$mode" "$budget" "$(($(date +%s) - start))"
    for i in "${!names[@]}"; do
      n=${names[$i]}
      [[ ${status[$n]:-pending} == pass ]] || overall=fail
      ((first)) || printf ',\n'
      first=0
      printf '    {"name": "%s", "limit_s": %d, "seconds": %s, "status": "%s", "note": %s}' "$n" "${limits[$i]}" \
        "${seconds[$n]:-null}" "${status[$n]:-pending}" "$(json_str "${note[$n]:-}")"
    done
    printf '\n  ],\n  "failing_tests": ['
    first=1
    for t in "${failing_tests[@]}"; do
      ((first)) || printf ', '
      first=0
      json_str "$t"
    done
    printf '],\n  "result": "%s"\n}\n' "$overall"
  } >"$logs/summary.json.tmp" && mv "$logs/summary.json.tmp" "$logs/summary.json"
}

# The seconds stage i may run: up to the deadline less the limits of the stages after it (scaled
# down with the budget when GATTN_CHECK_BUDGET_S is less than the plan's sum).
stage_time() {
  local i=$1 later=0 j
  for ((j = i + 1; j < ${#limits[@]}; j++)); do later=$((later + limits[j])); done
  if ((budget < planned)); then later=$((later * budget / planned)); fi
  echo $((deadline - $(date +%s) - later))
}
stage_end=0
# Runs a command within what is left of the current stage (timeout's exit status 124 when cut).
limited() {
  local left=$((stage_end - $(date +%s)))
  ((left >= 1)) || return 124
  timeout --kill-after=5 "$left" "$@"
}
skip() {  # NAME WHY
  status[$1]=skipped
  note[$1]=$2
}
needs() {  # STAGE PREREQUISITE: skip STAGE unless PREREQUISITE passed
  [[ ${status[$2]:-} == pass ]] && return 0
  skip "$1" "needs $2, which did not pass"
  return 1
}

# ---- the stages (each returns 0 on pass; may set note[NAME]) ----

stage_deps() {
  # The GPU machine's image has CUDA, CMake, ninja and PyTorch but not the Debian libraries gattn
  # builds against, and nothing can be fetched there: scripts/gpu_deps.sh downloads them here as
  # .deb files into .gpu_deps/ (git-ignored: the device tool's run must name it in `carry`), and
  # they are unpacked into a prefix, OpenMPI's included (relocated with OPAL_PREFIX).
  prefix_args=()
  if ! ls .gpu_deps/*.deb >/dev/null 2>&1; then
    note[deps]="no .gpu_deps: using the image's own libraries"
    return 0
  fi
  deps=/tmp/gattn_deps
  # A rerun on the warm machine finds them unpacked (the stamp lists the .debs it was made from).
  if [[ $(cat "$deps/.unpacked" 2>/dev/null) != "$(ls .gpu_deps)" ]]; then
    rm -rf "$deps" && mkdir -p "$deps"
    # In parallel: about 200 MB to write, which one process at a time takes several seconds.
    printf '%s\0' .gpu_deps/*.deb | limited xargs -0 -P 8 -I{} bash scripts/gpu_deps.sh --unpack {} "$deps" ||
      { note[deps]="could not unpack every .deb"; return 1; }
    ls .gpu_deps >"$deps/.unpacked"
  fi
  local multiarch=x86_64-linux-gnu
  # The binaries get these directories as RUNPATH from CMake; LD_LIBRARY_PATH also serves the
  # libraries' own dependencies (OpenBLAS → libgfortran, OpenMPI's plugins).
  export LD_LIBRARY_PATH="$deps/usr/lib/$multiarch:$deps/usr/lib/$multiarch/openblas-openmp:$deps/usr/lib/$multiarch/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  prefix_args=(-DCMAKE_PREFIX_PATH="$deps/usr")
  # pkg-config modules (PCRE2) from the prefix: their .pc files say prefix=/usr, which would send
  # the compiler to the image's /usr/include; the prefix is redefined to where they were unpacked.
  export PKG_CONFIG_PATH="$deps/usr/lib/$multiarch/pkgconfig:$deps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  prefix_args+=(-DPKG_CONFIG_ARGN="--define-variable=prefix=$deps/usr")
  if [[ -x $deps/usr/bin/mpirun ]]; then
    # OpenMPI finds its plugins, help texts and wrapper data under OPAL_PREFIX instead of /usr.
    export OPAL_PREFIX="$deps/usr" PATH="$deps/usr/bin:$PATH"
    prefix_args+=(-DMPI_CXX_COMPILER="$deps/usr/bin/mpicxx")
  fi
  # The carried libraries are Debian 12's: libgfortran5 needs glibc >= 2.34. An older image would
  # end in a wall of link errors; one line instead, before any build time is spent.
  local glibc
  glibc=$(ldd --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  if [[ -z $glibc ]] || ! printf '2.34\n%s\n' "$glibc" | sort -V -C; then
    note[deps]="glibc ${glibc:-unknown}: the carried Debian 12 libraries need >= 2.34"
    return 1
  fi
  note[deps]="unpacked into $deps$([[ -n ${OPAL_PREFIX:-} ]] && echo ", OPAL_PREFIX=$OPAL_PREFIX")"
}

bench_built=0
configure() {  # BENCHMARKS (ON or OFF)
  local generator=()
  if command -v ninja >/dev/null 2>&1 && [[ ! -f build-gpu/CMakeCache.txt ]]; then generator=(-G Ninja); fi
  # Warnings are not errors here: another compiler may warn differently, and a failed build would
  # waste the device run (CI builds with warnings as errors).
  limited cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGATTN_WERROR=OFF -DGATTN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGATTN_BUILD_BENCHMARKS="$1" "${prefix_args[@]}" >"$logs/configure.log" 2>&1
}
stage_configure() {
  if [[ $mode == bench ]]; then
    if configure ON; then
      bench_built=1
      return 0
    fi
    # Google Benchmark may be missing on the image: the other benchmarks still run.
    note[configure]="configure with Google Benchmark failed: gattn_bench_cuda_ops left out"
  fi
  configure OFF || { tail -20 "$logs/configure.log"; return 1; }
  grep -q "MPI not found" "$logs/configure.log" && note[configure]="MPI not found: multi-rank runs disabled"
  return 0
}

stage_build() {
  local targets=(gattn_gpu_tests gattn)
  [[ $mode == bench ]] && targets=(gattn)
  ((bench_built)) && targets+=(gattn_bench_cuda_ops)
  limited cmake --build build-gpu -j "$jobs" --target "${targets[@]}" >"$logs/build.log" 2>&1 ||
    { grep -n -m 20 -E "error|Error" "$logs/build.log"; return 1; }
}

stage_ctest() {
  local left=$((stage_end - $(date +%s)))
  # Each test may take what is left of the stage, so a hung test is a timeout, not a lost run.
  (cd build-gpu && limited ctest -L gpu --output-on-failure -j 4 --timeout "$left") >"$logs/ctest_gpu.log" 2>&1
  local rc=$?
  tail -15 "$logs/ctest_gpu.log"
  # ctest's progress lines name each failed or timed-out test ("  7/90 Test  #7: Suite.Name ...***Failed").
  mapfile -t failing_tests < <(grep -oE 'Test +#[0-9]+: [^ ]+ \.*\*\*\*[A-Za-z]+' "$logs/ctest_gpu.log" |
    sed -E 's/^Test +#[0-9]+: ([^ ]+) .*$/\1/')
  # A skip for want of a device means the GPU was not usable: that is no pass.
  if grep -q "no CUDA device" "$logs/ctest_gpu.log"; then
    note[ctest]="tests skipped with 'no CUDA device'"
    return 1
  fi
  ((rc == 124)) && note[ctest]="stopped by the stage's limit"
  return "$rc"
}

stage_dist() {
  command -v mpirun >/dev/null 2>&1 || { note[dist]="no mpirun (carry .gpu_deps with OpenMPI)"; return 1; }
  limited bash tests/emulation/dist_on_device.sh "$root/build-gpu/gattn" --quick >"$logs/dist_on_device.log" 2>&1
  local rc=$?
  tail -5 "$logs/dist_on_device.log"
  return "$rc"
}

# The GPT-2 124M shape (configs/gpt2_124m.yaml: 12 layers, 768 wide, T = 1024, output gates) on
# synthetic tokens, one micro-batch per step. Prints tokens/s (median of the logged rates after
# SKIP steps) and MFU: 6·N + 6·L·T·C FLOPs per token (PaLM's formula with causal attention's half).
run_gpt2_shape() {  # NAME PRECISION BATCH STEPS PEAK_TFLOPS
  local name=$1 precision=$2 batch=$3 steps=$4 peak=$5
  rm -rf "build-gpu/$name"
  limited build-gpu/gattn train --config configs/gpt2_124m.yaml device=cuda train.precision="$precision" \
    data.kind=synthetic data.task=copy data.vocab_size=50304 train.batch_size="$batch" train.grad_accum=1 \
    train.max_steps="$steps" train.log_every=5 eval.every=0 eval.max_windows=4 checkpoint.every=0 \
    run.dir="build-gpu/$name" >"$logs/train_$name.log" 2>&1
  local rc=$?
  tail -3 "$logs/train_$name.log"
  cp "build-gpu/$name/metrics.jsonl" "$logs/${name}_metrics.jsonl" 2>/dev/null
  python3 - "$logs/${name}_metrics.jsonl" "$logs/train_$name.log" "$precision" "$peak" "$steps" <<'PY' || rc=1
import json, math, re, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
N = int(re.search(r"(\d+) parameters", open(sys.argv[2]).read()).group(1))  # "gattn train: N parameters"
precision, peak, steps = sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
train = [l for l in lines if l["split"] == "train"]
assert train and all(math.isfinite(l["loss"]) for l in train), "missing or non-finite losses"
skip = 20 if steps > 100 else 5
timed = [l for l in train if l["step"] > skip] or train
rate = statistics.median(l["tokens_per_s"] for l in timed)
L, T, C = 12, 1024, 768
flops = (6 * N + 6 * L * T * C) * rate
print(f"gpu_check: gpt2_124m shape, {precision}, {train[-1]['step']} steps: {rate:,.0f} tokens/s, "
      f"{flops / 1e12:.1f} TFLOP/s, MFU {100 * flops / (peak * 1e12):.1f}% of {peak:.0f}; "
      f"loss {train[0]['loss']:.3f} -> {train[-1]['loss']:.3f}")
PY
  return "$rc"
}

stage_gpt2() { run_gpt2_shape gpt2_check bf16 8 20 989; }

stage_bench_ops() {
  ((bench_built)) || { note[bench_ops]="not configured (no Google Benchmark)"; return 1; }
  limited build-gpu/benchmarks/gattn_bench_cuda_ops --benchmark_min_time=0.2 >"$logs/bench_cuda_ops.log" 2>&1
  local rc=$?
  cat "$logs/bench_cuda_ops.log"
  return "$rc"
}

# gattn's attention op against PyTorch (16k tokens per case, T 1k/4k/16k, 16x64 and 8x128, bf16):
# flash SDPA for none/output, the eager formula for score/forget/pair. The script splits its own
# time (gattn 45 %, PyTorch 30 %), so the stage's limit only catches a hang.
stage_attention_torch() {
  local t=$((stage_end - $(date +%s)))
  limited python3 benchmarks/scripts/attention_torch.py --gattn "$root/build-gpu/gattn" --device cuda --dtype bf16 \
    --T 1024,4096,16384 --heads-dim 16x64,8x128 --tokens 16384 --warmup 2 --iters 5 --max-iter-s 2 \
    --gattn-timeout $((t * 45 / 100)) --torch-budget $((t * 30 / 100)) --out "$logs/bench_attention.md" \
    >"$logs/bench_attention.log" 2>&1
  local rc=$?
  if [[ -s $logs/bench_attention.md ]]; then cat "$logs/bench_attention.md"; else tail -20 "$logs/bench_attention.log"; fi
  return "$rc"
}

# bf16 against the H200's dense bf16 peak of 989 TFLOP/s; fp32 (TF32 GEMMs, composed attention,
# several B·H·T·T score tensors per layer: 8 sequences keep them near 25 GB) against TF32's 494.
stage_gpt2_bf16() { run_gpt2_shape gpt2_bf16 bf16 16 200 989; }
stage_gpt2_fp32() { run_gpt2_shape gpt2_fp32 fp32 8 60 494; }

# ---- run ----

echo "gpu_check: $mode run, budget ${budget} s, logs in $logs"
if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi >"$logs/nvidia-smi.txt" 2>&1; else echo "no nvidia-smi" >"$logs/nvidia-smi.txt"; fi
head -12 "$logs/nvidia-smi.txt"
write_summary
declare -A prerequisite=([configure]=deps [build]=configure [ctest]=build [dist]=build [gpt2]=build
  [bench_ops]=build [attention_torch]=build [gpt2_bf16]=build [gpt2_fp32]=build)
for i in "${!names[@]}"; do
  n=${names[$i]}
  if [[ -n ${prerequisite[$n]:-} ]] && ! needs "$n" "${prerequisite[$n]}"; then
    echo "gpu_check: $n skipped (${note[$n]})"
    write_summary
    continue
  fi
  t=$(stage_time "$i")
  if ((t < 1)); then
    skip "$n" "no time left before the deadline"
    echo "gpu_check: $n skipped (past the deadline)"
    write_summary
    continue
  fi
  echo "gpu_check: $n (up to ${t} s) [$(elapsed)]"
  stage_end=$(($(date +%s) + t))
  began=$(date +%s)
  "stage_$n"
  rc=$?
  seconds[$n]=$(($(date +%s) - began))
  if ((rc == 0)); then status[$n]=pass; else status[$n]=fail; fi
  if ((rc == 124)) && [[ -z ${note[$n]:-} ]]; then note[$n]="stopped by its time limit"; fi
  echo "gpu_check: $n ${status[$n]} in ${seconds[$n]} s${note[$n]:+ (${note[$n]})}"
  write_summary
done

result=$(sed -n 's/^  "result": "\(.*\)"$/\1/p' "$logs/summary.json")
echo "gpu_check: $result in $(elapsed); summary: $logs/summary.json"
[[ $result == pass ]]
