#!/usr/bin/env bash
# `gattn ablate` and `gattn report` on encoder–decoder runs (docs/seq2seq.md): a 2-cell ablation of a
# tiny reverse model measures each cell's generation speed with generate_target (no decoder prompt,
# the val source's length recorded) and writes a report.html with a cross-attention section: per
# decoder block a map of target rows over source columns, token-labelled, beside the decoder's own
# self-attention and the encoder's. A longer run's map shows the reversal: the anti-diagonal.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

cat >"$tmp/s2s.yaml" <<'YAML'
seed: 0
device: cpu
data: {kind: synthetic, task: reverse, n_pairs: 5}
model: {arch: encoder_decoder, block_size: 12, n_layer: 1, n_head: 2, n_embd: 32}
train: {batch_size: 16, max_steps: 60, log_every: 20, threads: 1}
optim: {lr: 1.0e-2, warmup_steps: 10}
eval: {every: 0, max_windows: 32}
checkpoint: {every: 0}
YAML
cat >"$tmp/abl.yaml" <<EOF2
base: $tmp/s2s.yaml
grid:
  model.gate.kind: [none, output]
EOF2

# ablate: both cells train, get a generation speed, and the report shows their cross-attention.
out=$("$gattn" ablate --config "$tmp/abl.yaml" run.dir="$tmp/abl" model.gate.where=cross 2>&1) ||
  fail "ablate exited $?: $out"
grep -q "not measured" <<<"$out" && fail "a generation speed was not measured: $out"
[[ $(grep -c "done in .*, generation [0-9]* tokens/s" <<<"$out") -eq 2 ]] || fail "no generation speed printed: $out"
for c in kind-none kind-output; do
  python3 - "$tmp/abl/cells/$c/generation.json" <<'PY' || fail "$c/generation.json: $(cat "$tmp/abl/cells/$c/generation.json")"
import json, sys
g = json.load(open(sys.argv[1]))
# The target of the first val source (5 tokens): at most 5 + end decoder steps, from the start token.
assert g["tokens_per_s"] > 0 and g["source_tokens"] == 5 and g["prompt_tokens"] == 0, g
assert 1 <= g["new_tokens"] <= 12 and g["checkpoint"] == "step_00000060", g
PY
done
html="$tmp/abl/report.html"
[[ -s $html ]] || fail "ablate wrote no report.html"
grep -q '<section id="cross-attention"' "$html" || fail "the report has no cross-attention section"
for k in 0 1; do
  # The head mean of block 0 and head 0 (--heads 0:0,-1:0 on one block): 6 decoder inputs (start
  # and the 5 target tokens) over the 5 source tokens; the encoder's map is 5 × 5.
  for id in cross-attn-run$k-l0-mean cross-attn-run$k-l0-h0; do
    grep -q "data-rows=\"6\" data-cols=\"5\" id=\"$id\"" "$html" || fail "no 6 × 5 map $id"
  done
  grep -q "data-rows=\"5\" data-cols=\"5\" id=\"encoder-attn-run$k-l0-mean\"" "$html" || fail "no encoder map (run $k)"
  grep -q "data-rows=\"6\" data-cols=\"6\" id=\"attn-run$k-l0-h0\"" "$html" || fail "no decoder self-attention map"
done
python3 - "$html" <<'PY' || fail "the cross-attention map's labels"
import re, sys
h = open(sys.argv[1]).read()
svg = re.search(r'<svg[^>]*id="cross-attn-run0-l0-mean".*?</svg>', h, re.S).group(0)
rows = re.findall(r'class="row-label"[^>]*>([^<]*)<', svg)
cols = re.findall(r'class="col-label"[^>]*>([^<]*)<', svg)
assert len(rows) == 6 and len(cols) == 5 and rows[0] == "&lt;s&gt;", (rows, cols)
# Reversal: the decoder's input after the start token is the source backwards.
assert rows[1:] == cols[::-1], (rows, cols)
PY
grep -q 'id="gate-hist-run1-cross0"' "$html" || fail "no histogram of the cross gate values"

# report on a run that learnt the task: the mean cross-attention map is the anti-diagonal (target
# position i, which predicts t_{i+1} = s_{5-i}, attends most to source position 4 - i).
"$gattn" train --config "$tmp/s2s.yaml" train.max_steps=240 run.dir="$tmp/long" >/dev/null 2>&1 ||
  fail "training the longer run failed"
out=$("$gattn" report "$tmp/long" --heads 0:1 2>&1) || fail "report exited $?: $out"
python3 - "$tmp/long/report.html" <<'PY' || fail "the cross-attention map is not the reversal's"
import re, sys
h = open(sys.argv[1]).read()
assert 'id="cross-attn-run0-l0-h1"' in h, "no map of head 1"
svg = re.search(r'<svg[^>]*id="cross-attn-run0-l0-mean".*?</svg>', h, re.S).group(0)
a = {}
for i, j, v in re.findall(r'<title>target (\d+) [^<]*?→ source (\d+) [^<]*?: ([^<]+)</title>', svg):
    a[int(i), int(j)] = float(v)
argmax = [max(range(5), key=lambda j: a.get((i, j), 0)) for i in range(5)]
assert argmax == [4, 3, 2, 1, 0], argmax
PY

# The decoder's context gate per decoding step ([GateAttn-Guide] §4.4): a learnt reversal with a
# context gate on the cross-attention; the report writes the source's target greedily (the reversed
# source), colours each written token by the gate of the step that wrote it, and draws the gate per
# step, a line per decoder block. Headless Chromium renders that view on its own.
"$gattn" train --config "$tmp/s2s.yaml" train.max_steps=240 run.dir="$tmp/ctx" 'model.gates=[{kind: context, where: cross}]' \
  >/dev/null 2>&1 || fail "training the context-gate run failed"
out=$("$gattn" report "$tmp/ctx" 2>&1) || fail "report exited $?: $out"
command -v chromium >/dev/null || fail "chromium is not installed (./scripts/setup.sh installs it)"
/usr/bin/python3 - "$tmp/ctx/report.html" "$tmp/generated.html" <<'PY' || fail "the generated target's gate view (above)"
import re, sys
h = open(sys.argv[1], encoding="utf-8").read()
view = re.search(r'<div class="sample-gates generated" id="generated-run0">.*?</div></div>', h, re.S)
assert view, "no generated-target view"
spans = re.findall(r'<span style="background:(#[0-9a-f]{6})[^"]*" title="position (\d+): gate ([0-9.e-]+)">([^<]*)</span>',
                   view.group(0))
svg = re.search(r'<svg[^>]*id="cross-attn-run0-l0-mean".*?</svg>', h, re.S).group(0)
source = re.findall(r'class="col-label"[^>]*>([^<]*)<', svg)
written = [t for _, _, _, t in spans]
print("source", source, "written", written)
assert written == source[::-1], "the greedy target is not the reversed source"
assert all(0 < float(g) < 1 for _, _, g, _ in spans), spans
chart = re.search(r'<svg[^>]*id="gate-steps-run0".*?</svg>', h, re.S)
assert chart and chart.group(0).count("<polyline") == 1, "the gate per decoding step: one line (one block)"
style = re.search(r"<style>.*?</style>", h, re.S).group(0)
open(sys.argv[2], "w", encoding="utf-8").write(
    '<!DOCTYPE html><html><head><meta charset="utf-8">' + style + "</head><body>" + view.group(0) +
    chart.group(0) + "</body></html>")
PY
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chromium" \
  --window-size=900,600 --screenshot="$tmp/generated.png" "file://$tmp/generated.html" >"$tmp/chromium.log" 2>&1 ||
  fail "chromium could not render the view: $(tail -3 "$tmp/chromium.log")"
/usr/bin/python3 - "$tmp/generated.png" <<'PY' || fail "the screenshot does not show the coloured tokens and the line"
import sys
from PIL import Image
pixels = list(Image.open(sys.argv[1]).convert("RGB").getdata())
# The gate ramp runs #f7fbff → #08306b: token backgrounds are its blues, the chart line #1f77b4.
ramp = sum(1 for r, g, b in pixels if b > 100 and b - r > 25)
line = sum(1 for p in pixels if all(abs(a - c) < 40 for a, c in zip(p, (0x1f, 0x77, 0xb4))))
print(f"ramp pixels {ramp}, line pixels {line}")
assert ramp > 500 and line > 50
PY
exit 0
