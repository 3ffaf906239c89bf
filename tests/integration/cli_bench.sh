#!/usr/bin/env bash
# `gattn bench attention` on tiny CPU shapes: every registered gate kind is measured ("ok", positive times and
# TFLOP/s) in --json mode and in the table; grouped key/value heads (--kv-heads); bad input
# (unknown kind, bf16 on the CPU, T = 0, key/value heads that do not divide the heads, an unknown
# option) exits 2 with one line. Then, where PyTorch imports, the comparison scripts' CPU smoke runs
# write their markdown tables. T = 130 is not a multiple of any tile size.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
base=(--device cpu --dtype f32 --tokens 260 --iters 1 --warmup 0)
small=("${base[@]}" --T 64,130 --heads-dim 2x16)

# By default every kind the registry has (gattn gates --names), none first.
kinds=$("$gattn" gates --names | paste -sd,) || fail "gattn gates --names exited $?"
n_kinds=$(tr ',' '\n' <<<"$kinds" | wc -l)
out=$(OMP_NUM_THREADS=1 "$gattn" bench attention "${small[@]}" --json 2>"$tmp/err") ||
  fail "bench --json exited $?: $(cat "$tmp/err")"
[[ $(wc -l <<<"$out") -eq $((2 * n_kinds)) ]] || fail "expected $((2 * n_kinds)) JSON lines ($n_kinds kinds x 2 T), got: $out"
/usr/bin/python3 - "$out" "$kinds" <<'PY' || fail "the JSON lines are not what they should be"
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
kinds = sys.argv[2].split(",")
assert [(r["kind"], r["T"]) for r in rows] == [(k, T) for T in (64, 130) for k in kinds], rows
for r in rows:
    assert r["status"] == "ok", r
    assert (r["B"], r["H"], r["d"], r["device"], r["dtype"]) == (260 // r["T"], 2, 16, "cpu", "f32"), r
    for key in ("fwd_ms", "bwd_ms", "fwd_tflops", "fwd_bwd_tflops"):
        assert r[key] > 0, (key, r)
    # FLOP convention: forward 4·B·H·T²·d/2, backward 2.5× forward.
    flops = 4 * r["B"] * r["H"] * r["T"] ** 2 * r["d"] / 2
    assert abs(r["fwd_tflops"] - flops / (r["fwd_ms"] * 1e-3) / 1e12) <= 1e-6 * r["fwd_tflops"], r
    assert abs(r["fwd_bwd_tflops"] - 3.5 * flops / ((r["fwd_ms"] + r["bwd_ms"]) * 1e-3) / 1e12) <= 1e-6 * r["fwd_bwd_tflops"], r
print("json ok")
PY

table=$(OMP_NUM_THREADS=1 "$gattn" bench attention "${base[@]}" --kinds pair,none --T 130 --heads-dim 2x16 2>&1) || fail "table mode: $table"
[[ $(grep -c ' ok (f32)$' <<<"$table") -eq 2 ]] || fail "the table should have 2 ok rows: $table"

# Grouped key/value heads: one case per count, in the order given, H_kv in the JSON.
out=$(OMP_NUM_THREADS=1 "$gattn" bench attention "${base[@]}" --kinds none --T 130 --heads-dim 4x16 --kv-heads 4,2,1 \
  --json 2>"$tmp/err") || fail "bench --kv-heads exited $?: $(cat "$tmp/err")"
/usr/bin/python3 - "$out" <<'PY' || fail "the --kv-heads JSON lines are not what they should be: $out"
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
assert [(r["H"], r["H_kv"], r["status"]) for r in rows] == [(4, 4, "ok"), (4, 2, "ok"), (4, 1, "ok")], rows
PY

expect() {  # expect PATTERN ARGS...: exit 2 and one stderr line matching PATTERN
  local pattern=$1
  shift
  local err rc
  err=$("$gattn" bench attention "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || fail "$*: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$*: '$err' does not mention '$pattern'"
}
expect "unknown kind 'sideways'" "${small[@]}" --kinds none,sideways
out=$("$gattn" bench attention "${small[@]}" --kinds none,sideways 2>&1 >/dev/null)
grep -q "(none, " <<<"$out" || fail "the unknown-kind message should list the kinds: $out"
expect "bf16" --device cpu --dtype bf16 --T 64
expect "expected a positive integer, got '0'" "${base[@]}" --T 0
expect "expected a positive integer" "${base[@]}" --T 64,x
expect "expected HxD" "${base[@]}" --heads-dim 16
expect "kv-heads 3: must divide the head count 4 of --heads-dim 4x16" "${base[@]}" --T 64 --heads-dim 4x16 --kv-heads 3
expect "kv-heads: expected a positive integer" "${base[@]}" --T 64 --kv-heads 0
expect "no-such" "${small[@]}" --no-such-option
expect "expected cpu or cuda" --device tpu
expect "iters" --device cpu --iters 0
err=$("$gattn" bench 2>&1 >/dev/null); [[ $? -eq 2 ]] || fail "gattn bench without a target: $err"

# The comparison script's CPU smoke mode, where some python3 has PyTorch (tests use Debian's).
py=""
for cand in /usr/bin/python3 python3; do
  if "$cand" -c 'import torch' >/dev/null 2>&1; then py=$cand; break; fi
done
if [[ -z $py ]]; then
  echo "skip: no python3 with torch, the comparison script's smoke run is not tested"
else
  OMP_NUM_THREADS=1 timeout 120 "$py" "$root/benchmarks/scripts/attention_torch.py" --gattn "$gattn" "${small[@]}" --out "$tmp/bench.md" >"$tmp/py.log" 2>&1 ||
    fail "bench_attention_torch.py exited $?: $(tail -5 "$tmp/py.log")"
  [[ $(grep -c '^| \(none\|output\|score\|forget\|pair\) |' "$tmp/bench.md") -eq 10 ]] ||
    fail "the markdown table should have 10 rows: $(cat "$tmp/bench.md")"
  grep -q '× |' "$tmp/bench.md" || fail "no ratio in the table: $(cat "$tmp/bench.md")"
  # On the CPU the script states the CPU goals (docs/benchmarks.md); no T here reaches 1024.
  grep -q '^- none/output ≥ 1.5× PyTorch SDPA at T ≥ 1024: not measured' "$tmp/bench.md" ||
    fail "no CPU verdict line for none/output: $(cat "$tmp/bench.md")"
  grep -q '^- score/forget/pair ≥ 3.0× PyTorch.s best expression at T ≥ 1024: not measured' "$tmp/bench.md" ||
    fail "no CPU verdict line for score/forget/pair: $(cat "$tmp/bench.md")"
  grep -q 'Goals (docs/benchmarks.md; stated for an H200' "$tmp/bench.md" && fail "the GPU goals printed for a CPU run"
  # Grouped-query attention beside PyTorch's SDPA with enable_gqa (a PyTorch without it is said so).
  timeout 120 "$py" "$root/benchmarks/scripts/attention_gqa_torch.py" --gattn "$gattn" --T 130 --heads-dim 4x16 \
    --kv-heads 4,2 --tokens 260 --iters 1 --warmup 0 --threads 1 --out "$tmp/gqa.md" >"$tmp/gqa.log" 2>&1 ||
    fail "attention_gqa_torch.py exited $?: $(tail -5 "$tmp/gqa.log")"
  [[ $(grep -c '^| 1 | 4×16 |' "$tmp/gqa.md") -eq 2 ]] || fail "the GQA table should have 2 rows: $(cat "$tmp/gqa.md")"
  grep -q '^- ' "$tmp/gqa.md" || fail "no verdict line in the GQA table: $(cat "$tmp/gqa.md")"
fi
echo "ok"
