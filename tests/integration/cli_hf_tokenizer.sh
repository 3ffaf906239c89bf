#!/usr/bin/env bash
# Hugging Face tokenizer directories wherever gattn takes a tokenizer (docs/tokenize.md): GPT-2's
# tokenizer.json encodes shards (the same on 1 and 2 threads, its files copied byte for byte), a
# tiny model trains on them and samples from a text prompt; Llama 2's family encodes through its
# tokenizer.model; `gattn import` carries a model's tokenizer into the checkpoint, so sample
# --prompt reads text. Then the refusals: one line, exit 2 for what gattn does not implement, 3 for
# damaged files, nothing left at --out.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"
data="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/tokenizer" && pwd)"
hf="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/hf" && pwd)"

corpus="$tmp/corpus.txt"
for i in $(seq 1 20); do cat "$data/corpus.txt"; printf '\n'; done >"$corpus"

# --- shards with GPT-2's tokenizer ---
for t in 1 2; do
  out=$("$gattn" tokenize encode --tokenizer "$data/gpt2" --input "$corpus" --out "$tmp/shards$t" --threads "$t" \
    --shard-tokens 4000 2>&1) || fail "tokenize encode with gpt2 --threads $t exited $?: $out"
done
for f in "$tmp/shards1"/*; do
  cmp -s "$f" "$tmp/shards2/$(basename "$f")" || [[ $(basename "$f") == meta.json ]] ||
    fail "$(basename "$f") differs between 1 and 2 threads"
done
for f in tokenizer.json tokenizer_config.json; do
  cmp -s "$data/gpt2/$f" "$tmp/shards2/$f" || fail "the shards' $f is not the tokenizer's, byte for byte"
done
[[ ! -e $tmp/shards2/tokenizer.model ]] || fail "a tokenizer.model appeared beside GPT-2's shards"
sha=$(sha256sum "$data/gpt2/tokenizer.json" | cut -d' ' -f1)
python3 - "$tmp/shards2" "$sha" <<'PY' || fail "meta.json does not describe the shards"
import json, os, struct, sys
d, sha = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(d, "meta.json")))
assert meta["tokenizer_sha256"] == sha and meta["vocab_size"] == 50257, meta
ids = []
for s in meta["shards"]:
    raw = open(os.path.join(d, s["file"]), "rb").read()
    ids += struct.unpack("<%dH" % s["tokens"], raw[1024:])
# <|endoftext|> after the document, and where each of the 20 copies of the corpus spells it
assert ids[-1] == 50256 and ids.count(50256) == 21, ids.count(50256)
PY

# --- a run on them: the tokenizer's files in the run and its checkpoints, text in and out ---
cat >"$tmp/hf.yaml" <<'YAML'
seed: 0
device: cpu
data: {kind: tokens}
model: {block_size: 32, n_layer: 1, n_head: 2, n_embd: 16}
train: {batch_size: 4, max_steps: 2, log_every: 1, threads: 1}
optim: {lr: 3.0e-3}
eval: {every: 2, max_windows: 2}
checkpoint: {every: 2}
YAML
out=$("$gattn" train --config "$tmp/hf.yaml" data.path="$tmp/shards2" run.dir="$tmp/run" 2>&1) ||
  fail "training on GPT-2 shards exited $?: $out"
grep -q "vocab 50257" <<<"$out" || fail "the run does not take the tokenizer's 50257 ids: $out"
grep -q "bits/byte" <<<"$out" || fail "the eval lines lack bits per byte: $out"
cmp -s "$data/gpt2/tokenizer.json" "$tmp/run/tokenizer.json" || fail "the run directory lacks tokenizer.json"
out=$("$gattn" sample --checkpoint "$tmp/run" --prompt "ROMEO: 中文 🎉" --max-new-tokens 5 train.threads=1 2>/dev/null) ||
  fail "sample --prompt on a GPT-2 tokenizer model exited $?"
[[ $out == "ROMEO: 中文 🎉"* ]] || fail "the sample does not continue the prompt as text: $out"
"$gattn" inspect --checkpoint "$tmp/run/checkpoints/step_00000002" | grep -q "^tokenizer: 50257 pieces, sha256 $sha" ||
  fail "inspect does not name the checkpoint's tokenizer"
ev=$("$gattn" eval --checkpoint "$tmp/run" data.path="$tmp/shards1" train.threads=1) || fail "eval exited $?"
grep -q '"bits_per_byte":' <<<"$ev" || fail "eval reports no bits_per_byte: $ev"

# --- Llama 2's family: tokenizer.json with its tokenizer.model ---
"$gattn" tokenize encode --tokenizer "$data/llama2" --input "$corpus" --out "$tmp/spm" --threads 2 >/dev/null ||
  fail "tokenize encode with llama2 exited $?"
for f in tokenizer.json tokenizer.model tokenizer_config.json; do
  cmp -s "$data/llama2/$f" "$tmp/spm/$f" || fail "the Llama 2 shards' $f is not the tokenizer's"
done

# --- import carries the model's tokenizer ---
out=$("$gattn" import --hf "$data/tiny_gpt2" --out "$tmp/tiny" 2>&1) || fail "import of tiny_gpt2 exited $?: $out"
grep -q "tokenizer: Hugging Face (byte-level BPE), 320 ids" <<<"$out" || fail "import names no tokenizer: $out"
"$gattn" inspect --checkpoint "$tmp/tiny" | grep -q "^tokenizer: 320 pieces" || fail "inspect shows no tokenizer"
a=$("$gattn" sample --checkpoint "$tmp/tiny" --prompt "Hello world" --max-new-tokens 8 --temperature 0 2>/dev/null) ||
  fail "sample --prompt on an imported model exited $?"
b=$("$gattn" sample --checkpoint "$tmp/tiny" --prompt "Hello world" --max-new-tokens 8 --temperature 0 2>/dev/null)
[[ $a == "Hello world"* && $a == "$b" ]] || fail "greedy text samples differ or lose the prompt: '$a' vs '$b'"
"$gattn" sample --checkpoint "$tmp/tiny" --max-new-tokens 4 >/dev/null 2>&1 || fail "sample without a prompt exited $?"
"$gattn" import --hf "$data/tiny_gpt2" --out "$tmp/bare" --no-tokenizer >/dev/null || fail "--no-tokenizer exited $?"
expect 2 "no text vocabulary" sample --checkpoint "$tmp/bare" --prompt "Hello"

# A tokenizer with ids past 65535 (Llama 3's, Qwen's) writes uint32 shards (version 2), and a run
# trains on them.
mkdir "$tmp/wide" && python3 - "$data/tiny_gpt2/tokenizer.json" "$tmp/wide/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["model"]["vocab"]["zzzz"] = 70000; json.dump(t, open(sys.argv[2], "w"))
PY
"$gattn" tokenize encode --tokenizer "$tmp/wide" --input "$corpus" --out "$tmp/wide_shards" >/dev/null 2>&1 ||
  fail "tokenize encode with a vocabulary past 65536 failed"
[[ $(od -An -t d4 -j 4 -N 4 "$tmp/wide_shards/train_000000.bin" | tr -d ' ') == 2 ]] ||
  fail "a vocabulary past 65536 did not write version-2 (uint32) shards"
out=$("$gattn" train --config "$tmp/hf.yaml" data.path="$tmp/wide_shards" run.dir="$tmp/run_wide" model.n_embd=8 \
  model.n_head=2 train.max_steps=2 2>&1) || fail "training on uint32 shards failed: $out"
grep -q "vocab 70001" <<<"$out" || fail "the uint32 shards' vocabulary is not the tokenizer's: $out"

# --- refusals ---
mkdir "$tmp/wp" && python3 - "$data/tiny_gpt2/tokenizer.json" "$tmp/wp/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["model"]["type"] = "WordPiece"; json.dump(t, open(sys.argv[2], "w"))
PY
expect 2 "the model is a WordPiece" tokenize encode --tokenizer "$tmp/wp" --input "$corpus" --out "$tmp/x"
mkdir "$tmp/pre" && python3 - "$data/tiny_gpt2/tokenizer.json" "$tmp/pre/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["pre_tokenizer"] = {"type": "Whitespace"}; json.dump(t, open(sys.argv[2], "w"))
PY
expect 2 "Whitespace pre-tokenizer" tokenize encode --tokenizer "$tmp/pre" --input "$corpus" --out "$tmp/x"
mkdir "$tmp/merges" && python3 - "$data/tiny_gpt2/tokenizer.json" "$tmp/merges/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["model"]["merges"].append(["a", "zzz"]); json.dump(t, open(sys.argv[2], "w"))
PY
expect 3 "'zzz', which the vocabulary does not have" tokenize encode --tokenizer "$tmp/merges" --input "$corpus" \
  --out "$tmp/x"
mkdir "$tmp/none" && echo '{"model": "not an object"}' >"$tmp/none/tokenizer.json"
expect 3 "neither a Hugging Face tokenizer.json nor a tokenizer.model" tokenize encode --tokenizer "$tmp/none" \
  --input "$corpus" --out "$tmp/x"
printf 'bad \xff byte\n' >"$tmp/latin1.txt"
expect 3 "latin1.txt is not valid UTF-8 at byte offset 4" tokenize encode --tokenizer "$data/gpt2" \
  --input "$tmp/latin1.txt" --out "$tmp/x"
expect 2 "--prompt: the text is not valid UTF-8 at byte offset 3" sample --checkpoint "$tmp/tiny" \
  --prompt "$(printf 'abc\xff')"
[[ ! -e $tmp/x ]] || fail "a refused tokenize encode left --out"
# import: a tokenizer with more ids than the model, one gattn does not read.
cp -r "$hf/gpt2" "$tmp/big" && cp "$data/tiny_gpt2/tokenizer.json" "$tmp/big/"
expect 3 "more than config.json's vocab_size 128" import --hf "$tmp/big" --out "$tmp/x"
cp -r "$data/tiny_gpt2" "$tmp/wpmodel" && cp "$tmp/wp/tokenizer.json" "$tmp/wpmodel/"
expect 2 "WordPiece.*--no-tokenizer" import --hf "$tmp/wpmodel" --out "$tmp/x"
# A damaged tokenizer entry in a checkpoint: exit 3 naming the key.
source "$(dirname "${BASH_SOURCE[0]}")/lib/checkpoint_edit.sh"
cp -r "$tmp/tiny" "$tmp/damaged"
set_metadata "$tmp/damaged/model.safetensors" hf_tokenizer '{"tokenizer.json": "not base64!"}'
expect 3 "hf_tokenizer" sample --checkpoint "$tmp/damaged" --prompt "Hello"
[[ ! -e $tmp/x ]] || fail "a refused import left --out"
echo "cli_hf_tokenizer: ok"
