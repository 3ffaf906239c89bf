#!/usr/bin/env bash
# `gattn report`: two tiny real runs (noisy_recall with output gates, verse text with forget gates)
# give one self-contained report.html with every chart; headless Chromium renders it to a PNG that
# must show the charts (not a blank page). A second report over a run with three gates and a pair run
# must draw each attention block with its gates in the order of application, and the pair gate's α
# per layer over training for the pair run alone; its screenshot must show the gates' boxes.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

command -v chromium >/dev/null ||
  fail "chromium is not installed: this test renders the report in a real browser (./scripts/setup.sh installs it)"
/usr/bin/python3 -c "import PIL" 2>/dev/null || fail "python3-pil is missing (./scripts/setup.sh installs it)"

write_tiny_recall "$tmp/recall.yaml"
write_verse "$tmp/verse.txt"
"$gattn" train --config "$tmp/recall.yaml" model.gate.kind=output run.dir="$tmp/recall_output" >/dev/null 2>&1 ||
  fail "training the recall run failed"
"$gattn" train --config "$tmp/recall.yaml" model.gate.kind=forget data.kind=text data.path="$tmp/verse.txt" \
  run.dir="$tmp/verse_forget" >/dev/null 2>&1 || fail "training the text run failed"

out=$("$gattn" report "$tmp/recall_output" "$tmp/verse_forget" --output "$tmp/report.html" 2>&1) ||
  fail "report exited $?: $out"
grep -q "report: $tmp/report.html (2 run(s)" <<<"$out" || fail "report did not say where it wrote: $out"
html="$tmp/report.html"
count() { grep -o -- "$1" "$html" | wc -l; }
for id in summary loss-curves loss-by-position attention-stats gate-over-training gate-histograms sample; do
  grep -q "<section id=\"$id\"" "$html" || fail "no section $id"
done
# train loss, val loss, val accuracy, loss by position, entropy and sink ratio over training, gate mean
# per layer (2 runs)
[[ $(count 'data-chart="line"') -eq 8 ]] || fail "expected 8 line charts, got $(count 'data-chart="line"')"
[[ $(count 'data-chart="bars"') -eq 2 ]] || fail "expected 2 bar charts (entropy, sink ratio)"
[[ $(count 'data-chart="histogram"') -eq 4 ]] || fail "expected a gate histogram per layer and run (4)"
[[ $(count 'data-chart="heatmap"') -eq 4 ]] || fail "expected 2 attention maps per run (4)"
[[ $(count 'data-chart="diagram"') -eq 2 ]] || fail "expected an attention block diagram per run (2)"
grep -q '<section id="gate-parameters"' "$html" && fail "a gate-parameters section without a pair run"
[[ $(count 'class="tokens" data-layer=') -eq 4 ]] || fail "expected gate-coloured tokens per layer and run (4)"
grep -q '<polyline' "$html" || fail "the line charts have no lines"
# The gate by token class: the text run has one (its characters have classes), the recall run none.
grep -q '<section id="token-classes"' "$html" || fail "no token-class section"
grep -q 'id="token-classes-run1"' "$html" || fail "no token-class table for the text run"
grep -q 'id="token-classes-run0"' "$html" && fail "a token-class table for the run without text"
grep -q '<script' "$html" && fail "the report has a script"
grep -q '>T</span><span[^>]*>o</span>' "$html" || fail "the text run's sample text is missing"
# Self-contained: no URL but the SVG namespace name.
[[ $(grep -o 'https\?://[^"]*' "$html" | grep -vc '^http://www.w3.org/2000/svg$') -eq 0 ]] || fail "the report links out"

# A real browser renders it: the screenshot has chart colours and ink, not a blank page.
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chromium" \
  --window-size=1400,2400 --screenshot="$tmp/report.png" "file://$html" >"$tmp/chromium.log" 2>&1 ||
  fail "chromium could not render the report: $(tail -3 "$tmp/chromium.log")"
[[ -s $tmp/report.png ]] || fail "chromium wrote no screenshot"
/usr/bin/python3 - "$tmp/report.png" <<'PY' || fail "the screenshot does not show the charts"
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
w, h = img.size
assert (w, h) == (1400, 2400), f"size {w}x{h}"
pixels = list(img.getdata())
ink = sum(1 for p in pixels if sum(p) < 600) / len(pixels)
# The first series colours of the palette (#1f77b4 blue, #ff7f0e orange) and the gate ramp's dark end.
def near(p, c): return all(abs(a - b) < 40 for a, b in zip(p, c))
blue = sum(1 for p in pixels if near(p, (0x1f, 0x77, 0xb4)))
orange = sum(1 for p in pixels if near(p, (0xff, 0x7f, 0x0e)))
print(f"ink {ink:.3f}, blue {blue}, orange {orange}")
assert ink > 0.01, "almost nothing drawn"
assert blue > 200 and orange > 200, "no chart colours"
PY

# The block diagram: gates listed out of order on some layers, and a pair gate on layer 1.
"$gattn" train --config "$tmp/recall.yaml" model.n_layer=4 run.dir="$tmp/multi" \
  'model.gates=[{kind: output, layers: [2, 3], granularity: headwise}, {kind: score, layers: [1]}, {kind: input}]' \
  >/dev/null 2>&1 || fail "training the three-gate run failed"
"$gattn" train --config "$tmp/recall.yaml" 'model.gates=[{kind: pair, layers: [1]}]' run.dir="$tmp/pair" \
  >/dev/null 2>&1 || fail "training the pair run failed"
grep -q '"pair_alpha_by_layer":\[null,' "$tmp/pair/metrics.jsonl" || fail "the pair run logs no pair_alpha_by_layer"
out=$("$gattn" report "$tmp/multi" "$tmp/pair" --output "$tmp/gates.html" 2>&1) || fail "report exited $?: $out"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chromium" \
  --window-size=1400,1000 --screenshot="$tmp/gates.png" "file://$tmp/gates.html" >"$tmp/chromium.log" 2>&1 ||
  fail "chromium could not render the gates report: $(tail -3 "$tmp/chromium.log")"
/usr/bin/python3 - "$tmp/gates.html" "$tmp/gates.png" <<'PY' || fail "the block diagrams or the α chart are wrong (above)"
import re, sys
from PIL import Image
html = open(sys.argv[1], encoding="utf-8").read()
def svg(id_):
    m = re.search(r'<svg[^>]* id="%s".*?</svg>' % re.escape(id_), html, re.S)
    assert m, f"no svg {id_}"
    return m.group(0)
def gates(id_):  # (kind, stage, label, swatch colour) of each gate box, top to bottom
    return re.findall(r'<g class="box" data-kind="([a-z]+)" data-stage="([^"]+)">.*?'
                      r'<rect class="swatch"[^>]* fill="(#[0-9a-f]{6})".*?<text class="detail"[^>]*>([^<]*)</text>',
                      svg(id_), re.S)
multi, pair = gates("diagram-run0"), gates("diagram-run1")
print("multi:", multi, "\npair:", pair)
assert [(k, s, l) for k, s, _, l in multi] == [("input", "h", "all layers"), ("score", "S", "layer 1"),
                                              ("output", "y", "layers 2–3, headwise")], multi
assert [(k, s, l) for k, s, _, l in pair] == [("pair", "P", "layer 1")], pair
# The stages around them: the input gate before attn.qkv, the output gate before attn.proj.
d = svg("diagram-run0")
order = [d.find(t) for t in ("ln1 → h", 'data-kind="input"', "attn.qkv(h)", 'data-kind="score"', "softmax(S)",
                             'data-kind="output"', "attn.proj(y)</text>")]
assert -1 not in order and order == sorted(order), order
assert "id=\"gate-param-run1-pair_alpha\"" in html, "no α chart for the pair run"
assert "id=\"gate-param-run0-" not in html, "an α chart for the run without a pair gate"
assert svg("gate-param-run1-pair_alpha").count("<polyline") == 1, "the α chart should have one line (layer 1)"
# The page's top shows the diagrams: each gate's swatch colour is there in quantity.
img = Image.open(sys.argv[2]).convert("RGB")
pixels = list(img.getdata())
for kind, _, colour, _ in multi + pair:
    c = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    n = sum(1 for p in pixels if all(abs(a - b) < 30 for a, b in zip(p, c)))
    print(f"{kind} {colour}: {n} pixels")
    assert n > 200, f"the {kind} gate's box is not visible"
PY
exit 0
