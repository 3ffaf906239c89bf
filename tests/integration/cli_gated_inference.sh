#!/usr/bin/env bash
# Gated inference from the command line: `gattn sample` under each KV policy (seeded, the same
# tokens twice; the exact cache unchanged by the new options' defaults), `gattn bench generate`'s
# cells with the exact cache's loss equal to `gattn eval`'s, head skipping counted, and every bad
# option one line naming it with exit 2.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_tiny_recall "$tmp/recall.yaml"
"$gattn" train --config "$tmp/recall.yaml" run.dir="$tmp/score" model.gate.kind=score >"$tmp/train.out" 2>&1 ||
  fail "training exited $?: $(cat "$tmp/train.out")"
"$gattn" train --config "$tmp/recall.yaml" run.dir="$tmp/output" model.gate.kind=output \
  model.gate.granularity=headwise >"$tmp/train.out" 2>&1 || fail "training exited $?: $(cat "$tmp/train.out")"

sample() { "$gattn" sample --checkpoint "$1" --prompt-tokens "1 2 3" --max-new-tokens 30 --seed 4 "${@:2}" 2>"$tmp/err"; }
exact=$(sample "$tmp/score") || fail "sample exited $?: $(cat "$tmp/err")"
[[ $(sample "$tmp/score" --kv-policy full) == "$exact" ]] || fail "--kv-policy full changed the exact tokens"
for policy in window sink_window h2o gate; do
  a=$(sample "$tmp/score" --kv-policy $policy --kv-budget 50%) || fail "sample --kv-policy $policy exited $?: $(cat "$tmp/err")"
  grep -q "kv policy $policy, budget 6 keys per head" "$tmp/err" || fail "$policy: no summary line: $(cat "$tmp/err")"
  [[ $(wc -w <<<"$a") -eq 30 ]] || fail "$policy: expected 30 tokens, got '$a'"
  [[ $(sample "$tmp/score" --kv-policy $policy --kv-budget 50%) == "$a" ]] || fail "$policy: not reproducible"
done
sample "$tmp/output" --skip-heads-below 0.5 >/dev/null || fail "sample --skip-heads-below exited $?: $(cat "$tmp/err")"
grep -q "of head-queries skipped (gate below 0.5)" "$tmp/err" || fail "no skipped count: $(cat "$tmp/err")"

out=$("$gattn" bench generate --checkpoint "$tmp/score" --kv-budget 3,9 --max-windows 8 --gen-tokens 30 --repeats 1 \
  --json 2>&1) || fail "bench generate exited $?: $out"
ev=$("$gattn" eval --checkpoint "$tmp/score" eval.max_windows=8 2>&1) || fail "eval exited $?: $ev"
python3 - "$out" "$ev" <<'PY' || fail "bench generate cells: $out"
import json, sys
cells = [json.loads(l) for l in sys.argv[1].splitlines()]
assert [(c["policy"], c["budget"]) for c in cells] == [("full", None)] + [
    (p, b) for p in ("window", "sink_window", "h2o", "gate") for b in (3, 9)], cells
full = cells[0]
ev = json.loads(sys.argv[2].splitlines()[-1])
assert abs(full["val_loss"] - ev["loss"]) < 1e-4 * ev["loss"], (full, ev)
assert abs(full["accuracy"] - ev["accuracy"]) < 1e-9, (full, ev)
for c in cells:
    assert c["gen_tokens_per_s"] > 0 and c["kv_bytes"] > 0, c
    if c["budget"]:
        assert c["kv_bytes"] < full["kv_bytes"], c
PY

expect() {  # expect PATTERN COMMAND...: exit 2 and one stderr line matching PATTERN
  local pattern=$1
  shift
  local err rc
  err=$("$gattn" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || fail "$*: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$*: '$err' does not mention '$pattern'"
}
s=(sample --checkpoint "$tmp/score" --prompt-tokens "1 2")
expect "--kv-budget: must be between 1 and the context (model.block_size=12), got 0" "${s[@]}" --kv-policy window --kv-budget 0
expect "--kv-budget: must be between 1 and the context (model.block_size=12), got 13" "${s[@]}" --kv-policy h2o --kv-budget 13
expect "--kv-budget: expected a number of keys or a percentage" "${s[@]}" --kv-policy h2o --kv-budget half
expect "--kv-budget: a percentage of the context must be at most 100%, got 104%" "${s[@]}" --kv-policy h2o --kv-budget 104%
expect "--kv-sinks" "${s[@]}" --kv-policy sink_window --kv-budget 4 --kv-sinks -3
expect "--kv-recent" "${s[@]}" --kv-policy h2o --kv-budget 4 --kv-recent -1
expect "--kv-policy window: needs --kv-budget" "${s[@]}" --kv-policy window
expect "--kv-budget: policy full keeps every key" "${s[@]}" --kv-budget 4
expect "--kv-policy: 'lru' is not a policy" "${s[@]}" --kv-policy lru --kv-budget 4
expect "--kv-sinks: sink_window keeps the first --kv-sinks positions" "${s[@]}" --kv-policy sink_window --kv-budget 4 \
  --kv-sinks 4
expect "--kv-recent: the newest keys kept must be fewer than --kv-budget=4" "${s[@]}" --kv-policy gate --kv-budget 4 \
  --kv-recent 4
expect "--skip-heads-below: the model has no headwise output gate" "${s[@]}" --skip-heads-below 0.1
expect "--kv-policy gate: the model has no gate that values keys" sample --checkpoint "$tmp/output" \
  --prompt-tokens 1 --kv-policy gate --kv-budget 4
expect "--kv-policy gate: the model has no gate that values keys" bench generate --checkpoint "$tmp/output" \
  --kv-policy gate --kv-budget 4
# Flags no chosen policy reads, and counts no run could finish, are refused rather than ignored.
expect "--kv-sinks: only --kv-policy sink_window keeps sink positions" "${s[@]}" --kv-policy window --kv-budget 4 \
  --kv-sinks 1
expect "--kv-recent: only --kv-policy h2o and gate" "${s[@]}" --kv-policy sink_window --kv-budget 4 --kv-recent 1
expect "--kv-sinks: only --kv-policy sink_window" bench generate --checkpoint "$tmp/score" --kv-policy window,h2o \
  --kv-budget 4 --kv-sinks 1
expect "--gen-tokens: must be in \[1, 10000000\], got 0" bench generate --checkpoint "$tmp/score" --gen-tokens 0
expect "--repeats: must be in \[1, 1000\], got 5000" bench generate --checkpoint "$tmp/score" --repeats 5000
expect "--max-new-tokens: 99999999999999999999999 is beyond the 64-bit integers" "${s[@]}" \
  --max-new-tokens 99999999999999999999999
echo ok
