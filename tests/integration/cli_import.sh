#!/usr/bin/env bash
# `gattn import --hf DIR --out CKPT`: the committed tiny Hugging Face models (tests/data/hf/) become
# checkpoints that sample, eval, inspect and bench generate take; refusals are one line with exit 2
# (config.json, options, an existing --out) or 3 (files), and leave nothing at --out.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"
hf="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/hf" && pwd)"

for name in gpt2 llama qwen2 qwen3 qwen3_next qwen3_5; do
  out=$("$gattn" import --hf "$hf/$name" --out "$tmp/$name" 2>&1) || fail "import of $name exited $?: $out"
  grep -q "checkpoint: $tmp/$name" <<<"$out" || fail "$name: no checkpoint line: $out"
  [[ -f $tmp/$name/model.safetensors ]] || fail "$name: no model.safetensors"
  [[ $(ls -A "$tmp" | grep -c partial) -eq 0 ]] || fail "$name: a staging directory was left behind"
  # Greedy sampling from token ids, twice the same.
  a=$("$gattn" sample --checkpoint "$tmp/$name" --prompt-tokens "1 2 3" --max-new-tokens 8 --temperature 0 2>/dev/null) ||
    fail "$name: sample exited $?"
  b=$("$gattn" sample --checkpoint "$tmp/$name" --prompt-tokens "1 2 3" --max-new-tokens 8 --temperature 0 2>/dev/null)
  [[ -n $a && $a == "$b" ]] || fail "$name: greedy samples differ or are empty: '$a' vs '$b'"
  ins=$("$gattn" inspect --checkpoint "$tmp/$name" 2>&1) || fail "$name: inspect exited $?: $ins"
  grep -q "format: gattn/1" <<<"$ins" || fail "$name: inspect shows no format"
  grep -q "wte.weight" <<<"$ins" || fail "$name: inspect lists no wte.weight"
  grep -q 'imported: {"architecture":".*","from":"huggingface","model_type":"'"$name" <<<"$ins" ||
    fail "$name: inspect shows no import metadata: $ins"
  ev=$("$gattn" eval --checkpoint "$tmp/$name" data.kind=synthetic data.task=noisy_recall eval.max_windows=2 2>&1) ||
    fail "$name: eval exited $?: $ev"
  grep -q '"loss"' <<<"$ev" || fail "$name: eval printed no loss: $ev"
done

# --block-size caps the context (and the learned position table).
"$gattn" import --hf "$hf/gpt2" --out "$tmp/short" --block-size 16 >/dev/null || fail "--block-size 16 exited $?"
"$gattn" inspect --checkpoint "$tmp/short" | grep -q "wpe.weight *f32\[16, 64\]" || fail "wpe not cut to 16 rows"

# Refusals: one line, the right code, nothing at --out.
expect 2 "already exists" import --hf "$hf/gpt2" --out "$tmp/gpt2"
expect 2 "larger than the model's n_positions 64" import --hf "$hf/gpt2" --out "$tmp/x" --block-size 65
expect 2 "block-size must be > 0" import --hf "$hf/gpt2" --out "$tmp/x" --block-size -1
expect 2 "required" import --hf "$hf/gpt2"
expect 3 "not a directory" import --hf "$tmp/nothing" --out "$tmp/x"
cp -r "$hf/llama" "$tmp/bad"
sed -i 's/"model_type": "llama"/"model_type": "gemma"/; s/LlamaForCausalLM/GemmaForCausalLM/' "$tmp/bad/config.json"
expect 2 "config.json: architectures 'GemmaForCausalLM' is not a class gattn imports" import --hf "$tmp/bad" --out "$tmp/x"
rm -rf "$tmp/bad" && cp -r "$hf/gpt2" "$tmp/bad"
sed -i 's/"n_embd": 64/"n_embd": 32/' "$tmp/bad/config.json"
expect 3 "tensor 'transformer.wte.weight' has shape \[128, 64\], but .*config.json implies" import --hf "$tmp/bad" --out "$tmp/x"
rm -rf "$tmp/bad" && cp -r "$hf/qwen2" "$tmp/bad"
rm "$tmp/bad/model-00002-of-00002.safetensors"
expect 3 "shard model-00002-of-00002.safetensors is missing" import --hf "$tmp/bad" --out "$tmp/x"
rm -rf "$tmp/bad" && cp -r "$hf/gpt2" "$tmp/bad"
truncate -s 1000 "$tmp/bad/model.safetensors"
expect 3 "model.safetensors" import --hf "$tmp/bad" --out "$tmp/x"
[[ ! -e $tmp/x ]] || fail "a failed import left $tmp/x"
echo "cli_import: ok"
