#!/usr/bin/env bash
# The multi-rank trainer on CUDA tensors, run by the emulation build on the CPU: 2 ranks sharing
# one (emulated) GPU through the staged MPI backend give the losses and lrs of 1 rank × the same
# global batch to 1e-5 relative over 20 steps (gradient norms to 1e-3), with dist.zero 0 and 1; bf16
# gradient buckets train close to them; a 2-rank device checkpoint left by a killed rank resumes on
# 1 rank; a stalled rank ends the job with exit 3 and rank 0's line; NCCL at world size 1 equals the
# plain single-GPU run; and nccl with more ranks than GPUs is a config error (exit 2). The same script checks a real GPU (scripts/gpu_check.sh runs it on the CUDA build);
# without mpirun only the world-of-one checks run. With --quick (the device check's short run) only
# the 1-rank run, NCCL at world size 1 and the 2-rank dist.zero 0 run are checked.
# Usage: dist_on_device.sh GATTN [--quick]
set -u
gattn="$1"
quick=0
[[ ${2:-} == --quick ]] && quick=1
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib/dist.sh"
write_dist_config "$tmp/tiny.yaml" "$tmp/one"

# On the device the fused attention multiplies on bf16 tensor cores (fp32 runs too), and a weight that
# differs in its last bit between two batch splits can flip one of those roundings: gradient norms
# and gate means are compared to 1e-3 (the CPU and the device differ by as much on the same weights),
# losses and lrs to 1e-5 as on the CPU.
close_device_metrics() { close_metrics "$1" "$2" 0 1e-3; }

out=$("$gattn" train --config "$tmp/tiny.yaml" device=cuda train.batch_size=8 2>&1) || fail "1-rank device run exited $?: $out"

# NCCL as a world of one (where the build has NCCL) is the plain single-GPU run.
has_nccl=0
if "$gattn" --version 2>&1 | grep -q "^nccl: [0-9]"; then
  has_nccl=1
  out=$("$gattn" train --config "$tmp/tiny.yaml" device=cuda train.batch_size=8 dist.backend=nccl run.dir="$tmp/nccl1" 2>&1) ||
    fail "NCCL world-of-one run exited $?: $out"
  close_metrics "$tmp/one/metrics.jsonl" "$tmp/nccl1/metrics.jsonl" || fail "NCCL at world size 1 differs from the plain run"
fi
if ! command -v mpirun >/dev/null; then
  echo "dist_on_device: no mpirun: the multi-rank checks are skipped"
  exit 0
fi

zeros=(0 1)
((quick)) && zeros=(0)
for zero in "${zeros[@]}"; do
  out=$(ranks 2 "$tmp/tiny.yaml" device=cuda dist.backend=mpi dist.zero=$zero run.dir="$tmp/two_$zero") ||
    fail "2-rank device run (zero $zero) exited $?: $out"
  grep -q "2 ranks (mpi-staged, dist.zero $zero)" <<<"$out" || fail "no staged 2-rank banner: $out"
  close_device_metrics "$tmp/one/metrics.jsonl" "$tmp/two_$zero/metrics.jsonl" ||
    fail "2 ranks × 4 on the device (zero $zero) differ from 1 rank × 8"
done
if ((quick)); then
  echo "dist_on_device: ok (quick)"
  exit 0
fi

# bf16 buckets: each gradient rounded to bf16 before the sum; the losses stay within 1 %.
out=$(ranks 2 "$tmp/tiny.yaml" device=cuda dist.backend=mpi dist.grad_dtype=bf16 run.dir="$tmp/bf16") ||
  fail "2-rank bf16-bucket run exited $?: $out"
python3 - "$tmp/one/metrics.jsonl" "$tmp/bf16/metrics.jsonl" <<'PY' || fail "bf16 buckets drift from the f32 run"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if '"split":"train"' in l]
b = [json.loads(l) for l in open(sys.argv[2]) if '"split":"train"' in l]
assert len(a) == len(b) == 20, (len(a), len(b))
worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b))
assert worst < 1e-2, worst
print(f"bf16 buckets: max relative loss difference {worst:.2e}")
PY

# A 2-rank ZeRO-1 device run whose rank 1 is killed at step 8 leaves its step-6 checkpoint, which
# continues on 1 rank to the uninterrupted run's losses.
short=(train.max_steps=12 checkpoint.every=3 eval.every=4)
out=$("$gattn" train --config "$tmp/tiny.yaml" device=cuda "${short[@]}" run.dir="$tmp/ref12" train.batch_size=8 2>&1) ||
  fail "12-step reference exited $?: $out"
out=$(GATTN_TEST_FAULT=1:8:kill ranks 2 "$tmp/tiny.yaml" device=cuda dist.backend=mpi dist.zero=1 "${short[@]}" run.dir="$tmp/down")
(($? != 0)) || fail "a device job with a killed rank exited 0: $out"
[[ $(cat "$tmp/down/checkpoints/latest") == step_00000006 ]] || fail "latest after the kill: $(cat "$tmp/down/checkpoints/latest")"
out=$("$gattn" train --config "$tmp/tiny.yaml" device=cuda "${short[@]}" run.dir="$tmp/down" train.batch_size=8 --resume auto 2>&1) ||
  fail "1-rank resume of a 2-rank device checkpoint exited $?: $out"
grep -q "written by 2 rank(s); continuing on 1" <<<"$out" || fail "no world-size message: $out"
close_device_metrics "$tmp/ref12/metrics.jsonl" "$tmp/down/metrics.jsonl" || fail "2 -> 1 device resume differs"

# A stalled rank: the staged collectives time out as the host ones do; rank 0 names it and exits 3
# (mpirun then ends the stalled one).
out=$(GATTN_TEST_FAULT=1:3:hang timeout 60 "$launch" -n 2 "$tmp/tiny.yaml" device=cuda dist.backend=mpi dist.timeout_s=5 \
  run.dir="$tmp/hang" 2>&1)
rc=$?
((rc != 0 && rc != 124)) || fail "a device job with a stalled rank exited $rc: $out"
grep -q "gattn: rank 0 of 2: dist: .* did not complete within 5 s (dist.timeout_s)" <<<"$out" ||
  fail "no timeout line from rank 0: $out"

# Two ranks, one GPU: NCCL cannot, and says so before anything is written.
gpus=$("$gattn" --version 2>&1 | sed -n 's/^cuda devices: //p')
if ((has_nccl == 1 && gpus == 1)); then
  out=$(ranks 2 "$tmp/tiny.yaml" device=cuda dist.backend=nccl run.dir="$tmp/refused")
  rc=$?
  ((rc == 2)) || fail "nccl with 2 ranks on 1 GPU exited $rc (expected 2): $out"
  grep -q "dist.backend 'nccl': 2 ranks on this node but 1 GPU(s)" <<<"$out" || fail "no clear refusal: $out"
  [[ ! -e $tmp/refused/metrics.jsonl ]] || fail "the refused run wrote metrics"
fi
echo "dist_on_device: ok"
