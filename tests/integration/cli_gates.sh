#!/usr/bin/env bash
# Several gates from the command line: `gattn gates` lists the registered kinds; a run with
# model.gates trains and logs pooled gate statistics and every regulariser it has by name; bad gate
# entries exit 2 with one line naming the key; resuming a checkpoint with another gate layout exits 3
# naming model.gates, and leaves the run as it was.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

names=$("$gattn" gates --names) || fail "gattn gates --names exited $?"
[[ $(head -1 <<<"$names") == none ]] || fail "gates --names should start with none: $names"
for k in score forget pair routed context output; do grep -qx "$k" <<<"$names" || fail "$k not listed: $names"; done
table=$("$gattn" gates) || fail "gattn gates exited $?"
[[ $(grep -c '^| `' <<<"$table") -eq $(wc -l <<<"$names") ]] || fail "one table row per kind expected: $table"

write_tiny_recall "$tmp/tiny.yaml"
run="$tmp/run"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$run" checkpoint.every=10 \
  'model.gates=[{kind: score}, {kind: routed, windows: [0, 4], layers: [1]}, {kind: output, layers: [1]}]' \
  regularization.router_balance=0.01 2>&1) || fail "training with model.gates exited $?: $out"
/usr/bin/python3 - "$run/metrics.jsonl" <<'PY' || fail "metrics.jsonl lacks the pooled statistics or the regularisers"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
last = rows[-1]
assert "gate_mean_by_layer" in last and all(v is not None for v in last["gate_mean_by_layer"]), last
assert "router_balance" in last and "gate_entropy" in last, last
print("metrics ok")
PY

expect() {  # expect CODE PATTERN ARGS...: exit CODE and one stderr line matching PATTERN
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$gattn" train --config "$tmp/tiny.yaml" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq $code ]] || fail "$*: exit $rc, expected $code ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$*: '$err' does not mention '$pattern'"
}
expect 2 "block 0 already has a 'output' gate" run.dir="$tmp/x1" 'model.gates=[{kind: output}, {kind: output}]'
expect 2 "block index 7 out of range" run.dir="$tmp/x2" 'model.gates=[{kind: output, layers: [7]}]'
expect 2 "unknown gate kind 'sideways'" run.dir="$tmp/x3" 'model.gates=[{kind: sideways}]'
expect 2 "means nothing for gate kind 'score'" run.dir="$tmp/x4" model.gate.kind=score model.gate.granularity=headwise
cat >"$tmp/both.yaml" <<'YAML'
model:
  gate: {kind: output}
  gates: [{kind: score}]
YAML
err=$("$gattn" train --config "$tmp/both.yaml" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "model.gate and model.gates in one file: exit $rc ($err)"
grep -q "both given" <<<"$err" || fail "model.gate and model.gates in one file: $err"
for d in x1 x2 x3 x4; do [[ ! -e "$tmp/$d" ]] || fail "a refused config created $tmp/$d"; done

# The checkpoint's gates are score/routed/output; resuming with another layout is damage to refuse.
before=$(cat "$run/metrics.jsonl")
before_config=$(cat "$run/config.yaml")
err=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$run" --resume auto \
  'model.gates=[{kind: score}, {kind: pair}]' 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "resume with another gate layout: exit $rc, expected 3 ($err)"
grep -q "model.gates" <<<"$err" || fail "resume with another gate layout should name model.gates: $err"
[[ "$(cat "$run/metrics.jsonl")" == "$before" ]] || fail "the refused resume changed metrics.jsonl"
[[ "$(cat "$run/config.yaml")" == "$before_config" ]] || fail "the refused resume rewrote config.yaml"
echo "ok"
