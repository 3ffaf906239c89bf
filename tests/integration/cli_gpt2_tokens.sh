#!/usr/bin/env bash
# configs/gpt2_124m.yaml trains on real-format GPT-2 shards (llm.c .bin, ids up
# to 50,256). Token ids used to be checked against data.vocab_size (32, a synthetic-task setting),
# so the shipped recipe refused every real shard; they are checked against model.vocab_size. The
# model is shrunk for speed; the config's data and vocabulary settings are the shipped ones.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
config="$(dirname "${BASH_SOURCE[0]}")/../../configs/gpt2_124m.yaml"

# write_shard FILE N [BAD_ID]: N GPT-2-like ids (an <|endoftext|>, 50256, every 64 tokens), with
# BAD_ID at position 3 when given.
write_shard() {
  python3 - "$@" <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
ids = [50256 if i % 64 == 0 else (i * 7919) % 50257 for i in range(n)]
if len(sys.argv) > 3:
    ids[3] = int(sys.argv[3])
header = [20240520, 1, n] + [0] * 253
with open(path, "wb") as f:
    f.write(struct.pack("<256i", *header))
    f.write(struct.pack("<%dH" % n, *ids))
PY
}
mkdir -p "$tmp/shards"
write_shard "$tmp/shards/fineweb_train_000001.bin" 4096
write_shard "$tmp/shards/fineweb_val_000000.bin" 1024

small=(device=cpu train.precision=fp32 train.threads=1 model.n_layer=1 model.n_head=2 model.n_embd=16
       model.block_size=32 train.batch_size=2 train.grad_accum=1 train.max_steps=2 eval.every=0
       eval.max_windows=2 checkpoint.every=0)
out=$("$gattn" train --config "$config" data.path="$tmp/shards" run.dir="$tmp/run" "${small[@]}" 2>&1) ||
  fail "the GPT-2 recipe refused GPT-2 shards (exit $?): $out"
grep -q "vocab 50304" <<<"$out" || fail "the run does not use the model's 50304-token vocabulary: $out"
grep -q "vocab_size: 50304" "$tmp/run/config.yaml" || fail "config.yaml lacks model.vocab_size 50304"
ev=$("$gattn" eval --checkpoint "$tmp/run" train.threads=1) || fail "eval of the GPT-2 run exited $?"
grep -q '"tokens":64' <<<"$ev" || fail "eval did not score 2 windows of 32 tokens: $ev"

# An id the model has no embedding for is a data error naming the model's vocabulary.
write_shard "$tmp/shards/fineweb_val_000000.bin" 1024 60000
err=$("$gattn" train --config "$config" data.path="$tmp/shards" run.dir="$tmp/run2" "${small[@]}" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "token id 60000: exit $rc, expected 3: $err"
grep -q "fineweb_val_000000.bin holds token id 60000 at token 3 (byte offset 1030) of the shard, outside the model's vocabulary (model.vocab_size 50304)" <<<"$err" ||
  fail "token id 60000: $err"
echo ok
