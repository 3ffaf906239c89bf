#!/usr/bin/env bash
# `gattn ablate`: a 2-cell grid trains both cells and writes summary.csv, summary.md and
# report.html, with each cell's parameters, FLOPs per token and generation tokens/s (measured on its
# final checkpoint into generation.json); a re-run skips finished cells; an interrupted cell is
# resumed; bad ablation files and a report on a directory without metrics exit 2 with one line.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_tiny_recall "$tmp/base.yaml"
cat >"$tmp/abl.yaml" <<EOF2
base: $tmp/base.yaml
overrides:
  train.max_steps: 20
grid:
  model.gate.kind: [none, output]
EOF2
out=$("$gattn" ablate --config "$tmp/abl.yaml" run.dir="$tmp/abl" 2>&1) || fail "ablate exited $?: $out"
for f in summary.csv summary.md report.html cells/kind-none/metrics.jsonl cells/kind-output/checkpoints/latest \
  logs/kind-output.log; do
  [[ -s $tmp/abl/$f ]] || fail "ablate wrote no $f: $out"
done
[[ $(wc -l <"$tmp/abl/summary.csv") -eq 3 ]] || fail "summary.csv should have a header and 2 rows: $(cat "$tmp/abl/summary.csv")"
head -1 "$tmp/abl/summary.csv" | grep -q "^cell,model.gate.kind,val_loss,val_accuracy,gate_mean" ||
  fail "summary.csv header: $(head -1 "$tmp/abl/summary.csv")"
grep -q "^kind-output,output,[0-9.]*,[0-9.]*,[0-9.]*," "$tmp/abl/summary.csv" || fail "no output row with values: $(cat "$tmp/abl/summary.csv")"
grep -q "^| none | 1 | [0-9]" "$tmp/abl/summary.md" || fail "summary.md lacks the none row: $(cat "$tmp/abl/summary.md")"
grep -q "^| output | 1 | [0-9]" "$tmp/abl/summary.md" || fail "summary.md lacks the output row"
grep -q "val loss" <<<"$out" || fail "ablate did not print the summary: $out"
grep -q "kind-output: done in .*, generation [0-9]* tokens/s" <<<"$out" || fail "no generation speed printed: $out"
grep -q "| tokens/s | gen tokens/s | parameters | MFLOP/token |" "$tmp/abl/summary.md" ||
  fail "summary.md lacks the generation and FLOPs columns: $(cat "$tmp/abl/summary.md")"
python3 - "$tmp/abl/summary.csv" "$tmp/abl/summary.md" <<'PY' || fail "the model size, FLOPs and generation columns"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
for r in rows:
    for key in ("parameters", "flops_per_token", "generation_tokens_per_s"):
        assert float(r[key]) > 0, (r["cell"], key, r[key])
    # FLOPs per token of a training step: about 6 per weight of the matrix products.
    assert 3 * int(r["parameters"]) < float(r["flops_per_token"]) < 12 * int(r["parameters"]), r
# The markdown rows carry the same: a positive generation speed and MFLOP/token.
for line in open(sys.argv[2]).read().splitlines()[2:]:
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert float(cells[-3].split()[0]) > 0 and float(cells[-1]) > 0, line
PY
for c in kind-none kind-output; do
  grep -q '"checkpoint":"step_00000020"' "$tmp/abl/cells/$c/generation.json" ||
    fail "$c/generation.json: $(cat "$tmp/abl/cells/$c/generation.json" 2>&1)"
done
[[ $(grep '"split": *"train"\|"split":"train"' "$tmp/abl/cells/kind-output/metrics.jsonl" | tail -1) == *'"step":20'* ]] ||
  fail "the cell did not get the overrides' 20 steps"

# A re-run skips both cells and trains nothing.
before=$(md5sum "$tmp/abl/cells/kind-output/metrics.jsonl" "$tmp/abl/cells/kind-output/generation.json")
rm "$tmp/abl/cells/kind-none/generation.json"  # a finished cell without the measurement gets it
out=$("$gattn" ablate --config "$tmp/abl.yaml" run.dir="$tmp/abl" 2>&1) || fail "re-run exited $?: $out"
[[ -s $tmp/abl/cells/kind-none/generation.json ]] || fail "the re-run did not measure the skipped cell's generation"
[[ $(grep -c "finished, skipped" <<<"$out") -eq 2 ]] || fail "re-run did not skip both cells: $out"
grep -q "training" <<<"$out" && fail "re-run trained again: $out"
[[ $(md5sum "$tmp/abl/cells/kind-output/metrics.jsonl" "$tmp/abl/cells/kind-output/generation.json") == "$before" ]] ||
  fail "re-run touched a finished cell"

# An interrupted cell (stopped at step 10 of 20) is resumed; a new grid value adds a cell.
"$gattn" train --config "$tmp/base.yaml" train.max_steps=20 model.gate.kind=score run.dir="$tmp/abl/cells/kind-score" \
  --stop-after 10 >/dev/null 2>&1 || fail "could not make an interrupted cell"
sed -i 's/\[none, output\]/[none, output, score]/' "$tmp/abl.yaml"
out=$("$gattn" ablate --config "$tmp/abl.yaml" run.dir="$tmp/abl" 2>&1) || fail "ablate with a stopped cell exited $?: $out"
grep -q "kind-score: resuming" <<<"$out" || fail "the stopped cell was not resumed: $out"
grep -q "resumed from .*step_00000010" "$tmp/abl/logs/kind-score.log" || fail "the cell did not resume from step 10"
[[ $(wc -l <"$tmp/abl/summary.csv") -eq 4 ]] || fail "summary.csv should have 3 rows now"

expect() {  # expect CODE PATTERN COMMAND ARGS...: exit CODE and one stderr line matching PATTERN
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$gattn" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq $code ]] || fail "$*: exit $rc, expected $code ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$*: '$err' does not mention '$pattern'"
}
printf 'base: %s\ngrid: {}\n' "$tmp/base.yaml" >"$tmp/empty.yaml"
expect 2 "the grid is empty" ablate --config "$tmp/empty.yaml" run.dir="$tmp/bad1"
printf 'base: %s\ngrid:\n  model.gate.knd: [none]\n' "$tmp/base.yaml" >"$tmp/badkey.yaml"
expect 2 "badkey.yaml:3: grid key 'model.gate.knd' is not a config key (did you mean 'model.gate.kind'?)" \
  ablate --config "$tmp/badkey.yaml" run.dir="$tmp/bad2"
printf 'base: %s\ngrid:\n  model.gate.kind: [none, sideways]\n' "$tmp/base.yaml" >"$tmp/badvalue.yaml"
expect 2 "cell kind-sideways: .*model.gate.kind" ablate --config "$tmp/badvalue.yaml" run.dir="$tmp/bad3"
printf 'base: %s/nope.yaml\ngrid:\n  seed: [0]\n' "$tmp" >"$tmp/nobase.yaml"
expect 2 "base '.*nope.yaml' is not a file" ablate --config "$tmp/nobase.yaml" run.dir="$tmp/bad4"
expect 2 "unknown key 'optim.lrr'" ablate --config "$tmp/abl.yaml" run.dir="$tmp/bad5" optim.lrr=1
expect 2 "cannot read the ablation file" ablate --config "$tmp/missing.yaml"
for d in bad1 bad2 bad3 bad4 bad5; do [[ ! -e $tmp/$d ]] || fail "bad input created $d"; done
mkdir -p "$tmp/not_a_run"
expect 2 "has no metrics.jsonl" report "$tmp/not_a_run"
expect 2 "is not a directory" report "$tmp/nowhere"
exit 0
