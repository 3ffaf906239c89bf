#!/usr/bin/env bash
# 8-bit gates at inference ([GatedAttn-Repro] §7): each gate kind's Tiny Shakespeare config
# (configs/shakespeare_char/<kind>.yaml, 2000 steps) trained once, then its final checkpoint
# evaluated as trained and with `gattn eval --gate-int8` (every gate weight matrix rounded to int8,
# one f32 scale per output channel) over the first 512 val windows. Prints one markdown table: the
# val loss both ways, the change, the gate weights and their bytes in f32 and int8, and the gates'
# share of the model's parameter bytes. Runs already trained are kept. About 8 min on 2 cores.
#
#   benchmarks/scripts/gate_int8_eval.sh [OUT_DIR]   (default runs/gate_int8)
#
# GATTN_BINARY picks the binary (default build/gattn).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gattn=${GATTN_BINARY:-build/gattn}
out=${1:-runs/gate_int8}
mkdir -p "$out"
rows="$out/evals.tsv"
: >"$rows"
for kind in $("$gattn" gates --names | tail -n +2); do  # every registered kind; the first line is none
  config=configs/shakespeare_char/$kind.yaml
  [[ -f $config ]] || { echo "gate_int8_eval: no $config (a kind without a Shakespeare config): left out" >&2; continue; }
  dir=$out/$kind
  if [[ ! -f $dir/checkpoints/latest ]]; then
    rm -rf "$dir"
    "$gattn" train --config "$config" "run.dir=$dir" eval.every=100000 >"$out/$kind.log" 2>&1
  fi
  soft=$("$gattn" eval --checkpoint "$dir" eval.max_windows=512)
  int8=$("$gattn" eval --checkpoint "$dir" eval.max_windows=512 --gate-int8)
  printf '%s\t%s\t%s\n' "$kind" "$soft" "$int8" >>"$rows"
done
/usr/bin/python3 - "$rows" <<'PY'
import json, sys
print("| kind | val loss f32 | val loss int8 gates | Δ | gate weight values | gate bytes f32 → int8 | gates' share of the model's bytes | max abs error |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for line in open(sys.argv[1]):
    kind, a, b = line.rstrip("\n").split("\t")
    p, q = json.loads(a), json.loads(b)
    print(f"| {kind} | {p['loss']:.5f} | {q['loss']:.5f} | {q['loss'] - p['loss']:+.1e} | {q['gate_int8_values']} | "
          f"{q['gate_bytes_f32']} → {q['gate_bytes_int8']} ({100 * (1 - q['gate_bytes_int8'] / q['gate_bytes_f32']):.1f} % less) | "
          f"{100 * q['gate_bytes_f32'] / q['model_bytes_f32']:.1f} % | {q['gate_int8_max_abs_error']:.2e} |")
PY
