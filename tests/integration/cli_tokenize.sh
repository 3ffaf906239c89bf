#!/usr/bin/env bash
# `gattn tokenize` from raw text to a trained model (docs/tokenize.md): a BPE tokenizer trained on a
# multilingual corpus, shards encoded with it (the same bytes on 1 and 2 threads), a tiny model
# trained on them whose run directory and checkpoints carry the tokenizer, sampling from a text
# prompt, eval's bits per byte, the report's subword pieces; then the bad inputs, each one line and
# an exit code, with nothing half-written in --out.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

corpus="$tmp/corpus.txt"
head -c 120000 "$repo/data/tinyshakespeare.txt" >"$corpus"
for i in $(seq 1 30); do
  printf '中文：今天天气很好 %d。Emoji 🎉🦄 naïve café\n  two  spaces\tand a tab\n' "$i" >>"$corpus"
done

# --- train ---
out=$("$gattn" tokenize train --input "$corpus" --vocab-size 600 --out "$tmp/tok" --threads 1 2>&1) ||
  fail "tokenize train exited $?: $out"
grep -q "a 600-piece bpe tokenizer" <<<"$out" || fail "unexpected summary: $out"
for f in tokenizer.model tokenizer.json vocab.txt; do [[ -f $tmp/tok/$f ]] || fail "tokenize train wrote no $f"; done
sha=$(sha256sum "$tmp/tok/tokenizer.model" | cut -d' ' -f1)
grep -q "\"sha256\": \"$sha\"" "$tmp/tok/tokenizer.json" || fail "tokenizer.json does not hold the model's sha256 $sha"
[[ $(wc -l <"$tmp/tok/vocab.txt") -eq 600 ]] || fail "vocab.txt does not list 600 pieces"

# --- encode: the same shards on 1 and 2 threads ---
for t in 1 2; do
  out=$("$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/shards$t" \
    --shard-tokens 10000 --threads "$t" 2>&1) || fail "tokenize encode --threads $t exited $?: $out"
done
grep -q "train + .* val tokens" <<<"$out" || fail "unexpected summary: $out"
for f in "$tmp/shards1"/*.bin; do
  cmp -s "$f" "$tmp/shards2/$(basename "$f")" || fail "$(basename "$f") differs between 1 and 2 threads"
done
python3 - "$tmp/shards2" "$sha" <<'PY' || fail "meta.json does not describe the shards"
import json, os, struct, sys
d, sha = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(d, "meta.json")))
assert meta["tokenizer_sha256"] == sha, meta["tokenizer_sha256"]
assert len([s for s in meta["shards"] if s["split"] == "train"]) >= 3, meta["shards"]
for split in ("train", "val"):
    total = 0
    for s in meta["shards"]:
        if s["split"] != split: continue
        raw = open(os.path.join(d, s["file"]), "rb").read()
        magic, version, count = struct.unpack("<3i", raw[:12])
        assert (magic, version, count) == (20240520, 1, s["tokens"]) and len(raw) == 1024 + 2 * count, s
        assert max(struct.unpack("<%dH" % count, raw[1024:])) < 600
        total += count
    assert total == meta[split + "_tokens"], (split, total)
size = os.path.getsize(os.path.join(os.path.dirname(d), "corpus.txt"))
assert meta["train_bytes"] + meta["val_bytes"] == size
assert abs(meta["val_bytes"] / size - 0.1) < 0.01, meta["val_bytes"]
PY
cmp -s "$tmp/tok/tokenizer.model" "$tmp/shards2/tokenizer.model" || fail "the shards' directory lacks the tokenizer"

# --- train on the shards: the tokenizer goes into the run and its checkpoints ---
cat >"$tmp/bpe.yaml" <<'YAML'
seed: 0
device: cpu
data: {kind: tokens}
model: {block_size: 32, n_layer: 1, n_head: 2, n_embd: 32, gate: {kind: output}}
train: {batch_size: 4, max_steps: 6, log_every: 3, threads: 1}
optim: {lr: 3.0e-3}
eval: {every: 3, max_windows: 4}
checkpoint: {every: 6}
YAML
out=$("$gattn" train --config "$tmp/bpe.yaml" data.path="$tmp/shards2" run.dir="$tmp/run" 2>&1) ||
  fail "training on the shards exited $?: $out"
grep -q "vocab 600" <<<"$out" || fail "the run does not take the tokenizer's 600 pieces: $out"
grep -q "bits/byte" <<<"$out" || fail "the eval lines lack bits per byte: $out"
grep -q "^sample:" <<<"$out" || fail "a run with a tokenizer ends without a text sample: $out"
cmp -s "$tmp/tok/tokenizer.model" "$tmp/run/tokenizer.model" || fail "the run directory lacks the tokenizer"
python3 - "$tmp/run" "$sha" <<'PY' || fail "metrics or checkpoint lack the tokenizer's traces"
import base64, hashlib, json, math, struct, sys
run, sha = sys.argv[1], sys.argv[2]
val = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"split":"val"' in l]
assert val and all(0 < v["bits_per_byte"] < v["loss"] / math.log(2) for v in val), val  # > 1 byte per token
raw = open(run + "/checkpoints/step_00000006/model.safetensors", "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
assert meta["tokenizer_sha256"] == sha
assert hashlib.sha256(base64.b64decode(meta["tokenizer"])).hexdigest() == sha
PY

# --- sample from text, eval, report ---
out=$("$gattn" sample --checkpoint "$tmp/run" --prompt "ROMEO: 中文 🎉" --max-new-tokens 20 train.threads=1 2>/dev/null) ||
  fail "sample --prompt on a tokenizer model exited $?"
[[ $out == "ROMEO: 中文 🎉"* ]] || fail "the sample does not continue the prompt as text: $out"
ev=$("$gattn" eval --checkpoint "$tmp/run" train.threads=1) || fail "eval exited $?"
grep -q '"bits_per_byte":' <<<"$ev" || fail "eval reports no bits_per_byte: $ev"
"$gattn" inspect --checkpoint "$tmp/run/checkpoints/step_00000006" | grep -q "^tokenizer: 600 pieces, sha256 $sha" ||
  fail "inspect does not name the checkpoint's tokenizer"
"$gattn" report "$tmp/run" --output "$tmp/report.html" >/dev/null 2>&1 || fail "report exited $?"
grep -q 'class="piece"' "$tmp/report.html" || fail "the report's sample does not show subword pieces"

# --- bad input: one line, the exit code, nothing half-written ---
expect() {  # expect CODE PATTERN CMD...: exit CODE and one line on stderr matching PATTERN
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc -eq $code ]] || fail "exit $rc, not $code: $* -> $err"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "not one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "'$pattern' not in: $err"
}
left_over() { ls -A "$tmp" | grep -q '\.partial-' && fail "a staging directory was left behind: $(ls -A "$tmp")"; }
expect 2 "uint16" "$gattn" tokenize train --input "$corpus" --vocab-size 70000 --out "$tmp/big"
expect 2 "already exists" "$gattn" tokenize train --input "$corpus" --vocab-size 600 --out "$tmp/tok"
# SentencePiece's own floors and failures, in gattn's words and with the option to change.
expect 2 "--vocab-size 260 is too small for this text: .* use --vocab-size [0-9]* or more" "$gattn" tokenize train \
  --input "$corpus" --vocab-size 260 --out "$tmp/tok_small"
expect 2 "--max-lines must be 0 (every line) or more than 100" "$gattn" tokenize train --input "$corpus" \
  --vocab-size 600 --max-lines 50 --out "$tmp/tok_small"
expect 2 "--character-coverage must be in \[0.98, 1\]" "$gattn" tokenize train --input "$corpus" --vocab-size 600 \
  --character-coverage 0.5 --out "$tmp/tok_small"
[[ ! -e $tmp/tok_small ]] || fail "a refused tokenize train left its --out"
: >"$tmp/empty.txt"
expect 3 "holds no text" "$gattn" tokenize train --input "$tmp/empty.txt" --vocab-size 600 --out "$tmp/tok_empty"
[[ ! -e $tmp/tok_empty ]] || fail "a failed tokenize train left its --out"
expect 3 "missing.txt" "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" "$tmp/missing.txt" --out "$tmp/enc"
expect 3 "holds no text" "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$tmp/empty.txt" --out "$tmp/enc"
[[ ! -e $tmp/enc ]] || fail "a failed tokenize encode left its --out"
left_over
# Bytes that are not UTF-8 would become U+FFFD and not decode to themselves: refused by file and offset.
printf 'good line\nbad \xff byte\n' >"$tmp/latin1.txt"
expect 3 "latin1.txt is not valid UTF-8 at byte offset 14 (0xFF)" "$gattn" tokenize train --input "$tmp/latin1.txt" \
  --vocab-size 600 --out "$tmp/tok_bad"
expect 3 "latin1.txt is not valid UTF-8 at byte offset 14 (0xFF)" "$gattn" tokenize encode --tokenizer "$tmp/tok" \
  --input "$corpus" "$tmp/latin1.txt" --out "$tmp/enc"
expect 2 "--prompt: the text is not valid UTF-8 at byte offset 3 (0xC3)" "$gattn" sample --checkpoint "$tmp/run" \
  --prompt "$(printf 'abc\xc3(')" train.threads=1
[[ ! -e $tmp/tok_bad && ! -e $tmp/enc ]] || fail "a refused input left --out"
left_over
printf 'not a model' >"$tmp/garbage.model"
expect 3 "not a SentencePiece tokenizer model" "$gattn" tokenize encode --tokenizer "$tmp/garbage.model" --input "$corpus" --out "$tmp/enc"
expect 2 "val-fraction" "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/enc" --val-fraction 1.5

# --force replaces the output whole, and only when the new one is complete.
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/shards1" --force --threads 1 >/dev/null ||
  fail "encode --force exited $?"
expect 3 "missing.txt" "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$tmp/missing.txt" --out "$tmp/shards1" --force
[[ -f $tmp/shards1/meta.json && -f $tmp/shards1/train_000000.bin ]] || fail "a failed --force damaged the previous output"
left_over

# Shards and a tokenizer that do not belong together; a checkpoint read with another tokenizer of
# the same size (so only the tokenizer differs, not the config).
other="$tmp/other.txt"
tail -c 120000 "$repo/data/tinyshakespeare.txt" >"$other"
cat "$corpus" >>"$other"
"$gattn" tokenize train --input "$other" --vocab-size 600 --out "$tmp/tok_b" --threads 1 >/dev/null || fail "tok_b"
cmp -s "$tmp/tok/tokenizer.model" "$tmp/tok_b/tokenizer.model" && fail "two corpora gave the same tokenizer"
cp -r "$tmp/shards2" "$tmp/mixed"
cp "$tmp/tok_b/tokenizer.model" "$tmp/mixed/tokenizer.model"
expect 2 "model.vocab_size 100 is smaller than the [0-9]* pieces of the shards' tokenizer .*set it to at least" \
  "$gattn" train --config "$tmp/bpe.yaml" data.path="$tmp/shards2" run.dir="$tmp/run_small_vocab" model.vocab_size=100
expect 3 "do not belong together" "$gattn" train --config "$tmp/bpe.yaml" data.path="$tmp/mixed" run.dir="$tmp/run_mixed"
[[ ! -e $tmp/run_mixed ]] || fail "a refused run left its directory"
"$gattn" tokenize encode --tokenizer "$tmp/tok_b" --input "$corpus" --out "$tmp/shards_b" --threads 1 >/dev/null || fail "shards_b"
expect 3 "trained with tokenizer" "$gattn" eval --checkpoint "$tmp/run" data.path="$tmp/shards_b" train.threads=1
expect 3 "trained with tokenizer" "$gattn" train --config "$tmp/bpe.yaml" data.path="$tmp/shards_b" run.dir="$tmp/run" \
  train.max_steps=8 --resume auto
# Every shard must belong to the tokenizer the run uses, and meta.json must describe the files: a
# glob over two tokenize outputs, a stray shard from another encode, a shard whose count differs
# from meta.json's, a listed shard that is missing.
expect 3 "shards of different tokenizers cannot be mixed" "$gattn" train --config "$tmp/bpe.yaml" \
  data.path="$tmp/shards[2_]*/*.bin" run.dir="$tmp/run_glob"
cp -r "$tmp/shards2" "$tmp/stray"
cp "$tmp/shards_b/train_000000.bin" "$tmp/stray/train_000099.bin"
expect 3 "stray/train_000099.bin is not listed in" "$gattn" train --config "$tmp/bpe.yaml" data.path="$tmp/stray" \
  run.dir="$tmp/run_stray"
rm "$tmp/stray/train_000099.bin"
cp "$tmp/shards_b/train_000000.bin" "$tmp/stray/train_000000.bin"  # same name, other tokens
expect 3 "stray/train_000000.bin holds .* tokens, but .*meta.json lists" "$gattn" train --config "$tmp/bpe.yaml" \
  data.path="$tmp/stray" run.dir="$tmp/run_stray"
cp "$tmp/shards2/train_000000.bin" "$tmp/stray/train_000000.bin"
rm "$tmp/stray/train_000001.bin"
expect 3 "stray/train_000001.bin, listed in .*meta.json, is missing" "$gattn" train --config "$tmp/bpe.yaml" \
  data.path="$tmp/stray" run.dir="$tmp/run_stray"
[[ ! -e $tmp/run_glob && ! -e $tmp/run_stray ]] || fail "a refused run left its directory"
# --resume given a run directory: the message says which checkpoint to give instead.
expect 3 "--resume: $tmp/run is a run directory, not a checkpoint; give one of its checkpoints" "$gattn" train \
  --config "$tmp/bpe.yaml" data.path="$tmp/shards2" run.dir="$tmp/run_resumed" --resume "$tmp/run"
# Shards without their tokenizer continue a tokenizer model no more than shards of bare ids do.
rm "$tmp/shards_b/tokenizer.model" "$tmp/shards_b/meta.json"
expect 3 "has no tokenizer" "$gattn" eval --checkpoint "$tmp/run" data.path="$tmp/shards_b" train.threads=1
echo "cli_tokenize: ok"
