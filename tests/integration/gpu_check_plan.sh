#!/usr/bin/env bash
# scripts/gpu_check.sh --plan: the device check's stages in order (deps, configure, build, ctest,
# dist, gpt2), each with a time limit, the limits summing to at most 270 s so the check fits one
# short device run; --bench has a plan of its own; nothing is built or run. Arguments (the gattn
# binary) are not used.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fail() {
  echo "FAIL: $*"
  exit 1
}
out=$(env -u GATTN_CHECK_BUDGET_S bash "$root/scripts/gpu_check.sh" --plan) || fail "--plan exited $?: $out"
stages=$(awk '$1 != "total" && $3 == "s" && $2 ~ /^[0-9]+$/ {print $1}' <<<"$out" | tr '\n' ' ')
[[ $stages == "deps configure build ctest dist gpt2 " ]] || fail "stages '$stages' in: $out"
sum=$(awk '$1 != "total" && $3 == "s" && $2 ~ /^[0-9]+$/ {s += $2} END {print s}' <<<"$out")
total=$(awk '$1 == "total" {print $2}' <<<"$out")
((sum == total)) || fail "the limits sum to $sum, the plan says $total"
((sum <= 270)) || fail "the limits sum to $sum s, over the 270 s of one short device run"
grep -q "budget $sum s" <<<"$out" || fail "the budget is not the limits' sum: $out"
bench=$(env -u GATTN_CHECK_BUDGET_S bash "$root/scripts/gpu_check.sh" --plan --bench) || fail "--plan --bench exited $?"
grep -q "attention_torch" <<<"$bench" || fail "no PyTorch comparison in the bench plan: $bench"
grep -q "attention_torch\|bench_ops" <<<"$out" && fail "benchmarks in the check's plan: $out"
bash "$root/scripts/gpu_check.sh" --no-such-flag >/dev/null 2>&1
(($? == 2)) || fail "an unknown flag is not a usage error"
echo "ok"
