#!/usr/bin/env bash
# `gattn export --hf CKPT --out DIR`: the committed tiny checkpoints (tests/data/hf_export/) and
# checkpoints of short training runs become Hugging Face directories that `gattn import` reads back
# as the same model (the export of the import is the export, byte for byte); refusals are one line
# with exit 2 (a model no transformers class computes, listing what exports; an existing --out) or 3
# (a missing or damaged checkpoint), and leave nothing at --out.
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"
data="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/hf_export" && pwd)"

# export, import, export again: the two exports must be the same files.
round_trip() {  # round_trip NAME CKPT [export options]
  local name=$1 ckpt=$2
  shift 2
  out=$("$gattn" export --hf "$ckpt" --out "$tmp/$name.hf" "$@" 2>&1) || fail "export of $name exited $?: $out"
  grep -q "directory: $tmp/$name.hf" <<<"$out" || fail "$name: no directory line: $out"
  [[ -f $tmp/$name.hf/config.json && -f $tmp/$name.hf/model.safetensors ]] || fail "$name: config.json or weights missing"
  [[ $(ls -A "$tmp" | grep -c partial) -eq 0 ]] || fail "$name: a staging directory was left behind"
  "$gattn" import --hf "$tmp/$name.hf" --out "$tmp/$name.back" >/dev/null 2>&1 || fail "$name: import of the export failed"
  "$gattn" export --hf "$tmp/$name.back" --out "$tmp/$name.again" "$@" >/dev/null 2>&1 || fail "$name: second export failed"
  for f in config.json model.safetensors; do
    cmp -s "$tmp/$name.hf/$f" "$tmp/$name.again/$f" || fail "$name: the export of the import differs in $f"
  done
}

for name in gpt2 llama qwen2 qwen3 qwen3_next qwen3_next_headwise; do round_trip "$name" "$data/$name"; done
round_trip qwen3_5 "$data/qwen3_5" --class Qwen3_5ForCausalLM
grep -q '"model_type": "qwen3_5_text"' "$tmp/qwen3_5.hf/config.json" || fail "--class Qwen3_5ForCausalLM: not qwen3_5_text"
grep -q '"architectures": \[' "$tmp/gpt2.hf/config.json" || fail "no architectures in config.json"

# Checkpoints of short training runs (a run directory: its latest checkpoint), GPT-2's block and
# Llama's with Qwen's gate.
write_tiny_recall "$tmp/tiny.yaml"
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run_gpt2" train.max_steps=5 >/dev/null 2>&1 ||
  fail "could not train the GPT-2 run"
round_trip trained_gpt2 "$tmp/run_gpt2"
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run_gated" train.max_steps=5 model.position=rope \
  model.norm=rmsnorm model.norm_offset=true model.mlp=swiglu model.qk_norm=rmsnorm model.bias=false \
  model.n_kv_head=1 model.gate.kind=output model.gate.bias=false >/dev/null 2>&1 || fail "could not train the gated run"
round_trip trained_gated "$tmp/run_gated"
grep -q '"model_type": "qwen3_next"' "$tmp/trained_gated.hf/config.json" || fail "the gated run is not Qwen3-Next"

# The tokenizer goes with the model, byte for byte, and comes back through the import.
tok_model="$(cd "$data/../tokenizer/tiny_gpt2" && pwd)"
"$gattn" import --hf "$tok_model" --out "$tmp/tok_ckpt" >/dev/null 2>&1 || fail "could not import the model with a tokenizer"
round_trip with_tokenizer "$tmp/tok_ckpt"
for f in "$tok_model"/tokenizer*.json; do
  cmp -s "$f" "$tmp/with_tokenizer.hf/$(basename "$f")" || fail "export: $(basename "$f") is not the model's own"
  cmp -s "$f" "$tmp/with_tokenizer.again/$(basename "$f")" || fail "export of the import: $(basename "$f") differs"
done

# A gate fine-tuned into a Qwen3-style run (train.init_from, ramped in) exports as Qwen3-Next once
# its ramp is over, and is refused while it is still ramping in (the class has no ramp).
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run_qwen3" train.max_steps=5 model.position=rope \
  model.norm=rmsnorm model.mlp=swiglu model.qk_norm=rmsnorm model.bias=false >/dev/null 2>&1 ||
  fail "could not train the Qwen3-style run"
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run_tuned" train.max_steps=4 checkpoint.every=2 train.init_from="$tmp/run_qwen3" \
  "model.gate={kind: output, bias: false, ramp_steps: 3}" >/dev/null 2>&1 || fail "could not fine-tune the gate in"
round_trip tuned "$tmp/run_tuned"
grep -q '"model_type": "qwen3_next"' "$tmp/tuned.hf/config.json" || fail "the fine-tuned gate is not Qwen3-Next's"
expect 2 "ramp_steps is 3" export --hf "$tmp/run_tuned/checkpoints/step_00000002" --out "$tmp/x"

# Refusals: one line, the right code, nothing at --out.
expect 2 "already exists" export --hf "$data/gpt2" --out "$tmp/gpt2.hf"
expect 2 "required" export --hf "$data/gpt2"
expect 3 "neither a checkpoint directory" export --hf "$tmp/nothing" --out "$tmp/x"
mkdir -p "$tmp/damaged" && cp "$data/llama/model.safetensors" "$tmp/damaged/"
truncate -s 2000 "$tmp/damaged/model.safetensors"
expect 3 "model.safetensors" export --hf "$tmp/damaged" --out "$tmp/x"
"$make_checkpoint" "$tmp/score" score || fail "could not make the score checkpoint"
expect 2 "model.gate.kind is score, a gate no transformers class has.*gattn exports GPT2LMHeadModel (.*Qwen3NextForCausalLM" \
  export --hf "$tmp/score" --out "$tmp/x"
# The sigmoid GLU MLP: no class has it.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run_glu" train.max_steps=2 model.mlp=glu >/dev/null 2>&1 ||
  fail "could not train the glu run"
expect 2 "model.mlp is glu: no transformers class has a sigmoid-gated MLP.*gattn exports GPT2LMHeadModel (" \
  export --hf "$tmp/run_glu" --out "$tmp/x"
expect 2 "export --class Qwen3ForCausalLM: model.qk_norm is none" export --hf "$data/llama" --out "$tmp/x" --class Qwen3ForCausalLM
expect 2 "not a class gattn exports" export --hf "$data/llama" --out "$tmp/x" --class MistralForCausalLM
cp -r "$data/llama" "$tmp/llama_ckpt"
expect 2 "lies inside the --hf" export --hf "$tmp/llama_ckpt" --out "$tmp/llama_ckpt/hf"
[[ ! -e $tmp/x && ! -e $tmp/llama_ckpt/hf ]] || fail "a failed export left its --out"
echo "cli_export: ok"
