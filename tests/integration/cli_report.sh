#!/usr/bin/env bash
# `gattn report`: two tiny real runs (noisy_recall with output gates, verse text with forget gates)
# give one self-contained report.html with every chart; headless Chromium renders it to a PNG that
# must show the charts (not a blank page).
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
[[ $(count 'class="tokens" data-layer=') -eq 4 ]] || fail "expected gate-coloured tokens per layer and run (4)"
grep -q '<polyline' "$html" || fail "the line charts have no lines"
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
exit 0
