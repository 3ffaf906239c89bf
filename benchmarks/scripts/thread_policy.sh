#!/usr/bin/env bash
# Training tokens/s of one config under each OpenMP wait policy, on an idle machine and beside busy
# processes that compete for the cores, to choose the policy by measurement (docs/benchmarks.md).
#
#   benchmarks/scripts/thread_policy.sh [--config FILE] [--steps 150] [--threads 2] [--busy 0,1,2] [--repeat 3]
#                                  [KEY=VALUE ...]
#
# Policies: gattn's default (nothing set: gattn sets GOMP_SPINCOUNT itself, see
# framework/runtime/library_environment.h), libgomp's own default (gattn told not to set one), ACTIVE,
# PASSIVE and GOMP_SPINCOUNT values (how long a waiting thread spins before it sleeps). A run that
# takes longer than --limit seconds (default 120) is stopped and reported as such. A busy process is a shell loop that never
# sleeps. With --repeat N the policies run N times in turn (so a drift in the machine's speed hits
# them alike) and each row gives the median run and the range. Each run's the rate is the trainer's tokens_per_s at its last log line, and
# "cpu" is user+system seconds of gattn (spinning shows up there). GATTN_BINARY picks the binary
# (default build/gattn). Training output goes to a temporary directory.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
config=configs/shakespeare_char/output.yaml
steps=150
threads=2
busy_list=0,1
limit=120
repeat=1
overrides=()
while (($#)); do
  case $1 in
    --config) config=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --busy) busy_list=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *=*) overrides+=("$1"); shift ;;
    *) echo "thread_policy: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
gattn=${GATTN_BINARY:-build/gattn}
[[ -x $gattn ]] || { echo "thread_policy: $gattn is missing; run ./scripts/build.sh first" >&2; exit 2; }

policies=("gattn-default" "libgomp-default" "OMP_WAIT_POLICY=ACTIVE" "OMP_WAIT_POLICY=PASSIVE"
  "GOMP_SPINCOUNT=1000" "GOMP_SPINCOUNT=10000" "GOMP_SPINCOUNT=100000")
if [[ -n ${GATTN_POLICIES:-} ]]; then read -r -a policies <<<"$GATTN_POLICIES"; fi
tmp=$(mktemp -d)
busy_pids=()
cleanup() {
  ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

start_busy() {
  for ((i = 0; i < $1; ++i)); do
    bash -c 'while :; do :; done' &
    busy_pids+=($!)
  done
}
stop_busy() {
  ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null
  wait "${busy_pids[@]}" 2>/dev/null || true
  busy_pids=()
}

echo "$config ${overrides[*]}, $steps steps, $threads threads, $(nproc) cores"
echo
echo "| busy processes | policy | tokens/s (median) | range | wall s | gattn cpu s |"
echo "| --- | --- | --- | --- | --- | --- |"
IFS=, read -r -a busy_counts <<<"$busy_list"
for busy in "${busy_counts[@]}"; do
  start_busy "$busy"
  rm -f "$tmp/results"
  for ((rep = 0; rep < repeat; ++rep)); do
    for policy in "${policies[@]}"; do
      env_args=(-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u GATTN_OPENMP_POLICY_SET)
      case $policy in
        gattn-default) ;;
        libgomp-default) env_args+=(GATTN_OPENMP_POLICY_SET=1) ;;  # the marker: gattn leaves libgomp alone
        *) env_args+=("$policy") ;;
      esac
      rm -rf "$tmp/run"
      rc=0
      /usr/bin/time -f "%e %U %S" -o "$tmp/time" timeout "$limit" env "${env_args[@]}" "$gattn" train \
        --config "$config" run.dir="$tmp/run" train.max_steps="$steps" train.threads="$threads" train.log_every=25 \
        eval.every=0 eval.max_windows=1 checkpoint.every=0 "${overrides[@]}" >/dev/null 2>"$tmp/err" || rc=$?
      if ((rc == 124)); then
        echo "$policy 0 $limit 0" >>"$tmp/results"
        continue
      elif ((rc != 0)); then
        cat "$tmp/err" >&2
        exit 1
      fi
      read -r wall user sys <"$tmp/time"
      # Tokens between the first log line at or after step 25 and the last, over the time between them.
      rate=$(/usr/bin/python3 - "$tmp/run" <<'PY'
import json, os, sys, yaml
run = sys.argv[1]
cfg = yaml.safe_load(open(os.path.join(run, "config.yaml")))
tokens = cfg["train"]["batch_size"] * cfg["model"]["block_size"] * cfg["train"].get("grad_accum", 1)
rows = [r for r in map(json.loads, open(os.path.join(run, "metrics.jsonl"))) if r["split"] == "train"]
a, b = next(r for r in rows if r["step"] >= 25), rows[-1]
print((b["step"] - a["step"]) * tokens / (b["elapsed_s"] - a["elapsed_s"]))
PY
    )
      echo "$policy $rate $wall $(echo "$user + $sys" | bc)" >>"$tmp/results"
    done
  done
  # One row per policy: the run with the median rate, and the slowest and fastest rates.
  for policy in "${policies[@]}"; do
    grep "^$policy " "$tmp/results" | sort -k2 -g | awk -v busy="$busy" -v p="$policy" -v limit="$limit" '
      { rate[NR] = $2; wall[NR] = $3; cpu[NR] = $4 }
      END {
        m = int((NR + 1) / 2)
        if (rate[m] == 0) { printf "| %s | %s | stopped after %s s | | | |\n", busy, p, limit; exit }
        printf "| %s | %s | %.0f | %.0f–%.0f | %s | %.1f |\n", busy, p, rate[m], rate[1], rate[NR], wall[m], cpu[m]
      }'
  done
  stop_busy
done
