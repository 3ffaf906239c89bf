#!/usr/bin/env bash
# `--gate-int8` (docs/gates.md, 8-bit gates): eval, sample and bench generate round the gate weights
# to int8 per output channel and say what that saved; the loss moves a little but does move; a model
# without gates exits 2 with one line naming the flag and writes nothing to stdout.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/verse.txt"
"$gattn" train --config /dev/null run.dir="$tmp/out" device=cpu data.kind=text data.path="$tmp/verse.txt" \
  model.block_size=16 model.n_layer=2 model.n_head=2 model.n_embd=32 model.gate.kind=output train.batch_size=8 \
  train.max_steps=60 train.threads=1 optim.lr=0.01 eval.every=0 eval.max_windows=8 >/dev/null 2>&1 ||
  fail "training the gated run failed"
plain=$("$gattn" eval --checkpoint "$tmp/out") || fail "eval exited $?"
int8=$("$gattn" eval --checkpoint "$tmp/out" --gate-int8) || fail "eval --gate-int8 exited $?"
/usr/bin/python3 - "$plain" "$int8" <<'PY' || fail "eval --gate-int8: $int8"
import json, sys
p, q = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert "gate_int8" not in p, p
# Two output gates [C, C] = 32 × 32: 2048 values, 64 rows with a 4-byte scale each.
assert q["gate_int8"] is True and q["gate_int8_tensors"] == 2 and q["gate_int8_values"] == 2048, q
assert q["gate_bytes_f32"] == 8192 and q["gate_bytes_int8"] == 2048 + 4 * 64, q
assert 0 < q["gate_int8_max_abs_error"] < 1e-2, q
assert q["loss"] != p["loss"] and abs(q["loss"] - p["loss"]) < 0.05, (p["loss"], q["loss"])
PY
out=$("$gattn" sample --checkpoint "$tmp/out" --gate-int8 --max-new-tokens 8 2>"$tmp/err") || fail "sample exited $?"
grep -q "gate int8: 2 weight matrices, 2048 values rounded per output channel: 8192 -> 2304 bytes" "$tmp/err" ||
  fail "sample did not say what it rounded: $(cat "$tmp/err")"
"$gattn" bench generate --checkpoint "$tmp/out" --gate-int8 --kv-policy full --max-windows 2 --gen-tokens 4 \
  --repeats 1 --json >"$tmp/gen.json" 2>&1 || fail "bench generate exited $?: $(cat "$tmp/gen.json")"
grep -q '"gate_bytes_int8":2304' "$tmp/gen.json" || fail "bench generate's line lacks the int8 fields"

# No gates: exit 2, one line naming --gate-int8, nothing on stdout.
"$gattn" train --config /dev/null run.dir="$tmp/none" device=cpu data.kind=text data.path="$tmp/verse.txt" \
  model.block_size=16 model.n_layer=1 model.n_head=2 model.n_embd=16 train.batch_size=4 train.max_steps=2 \
  train.threads=1 eval.every=0 eval.max_windows=2 >/dev/null 2>&1 || fail "training the plain run failed"
for cmd in "eval" "sample --max-new-tokens 4" "bench generate --kv-policy full --max-windows 2"; do
  out=$("$gattn" $cmd --checkpoint "$tmp/none" --gate-int8 2>"$tmp/err"); rc=$?
  [[ $rc -eq 2 ]] || fail "$cmd --gate-int8 without gates exited $rc, expected 2"
  [[ -z $out ]] || fail "$cmd printed before refusing: $out"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] && grep -q -- "--gate-int8: the model has no gate weights" "$tmp/err" ||
    fail "$cmd: $(cat "$tmp/err")"
done
echo ok
