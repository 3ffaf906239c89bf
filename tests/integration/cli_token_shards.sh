#!/usr/bin/env bash
# data.kind tokens on memory-mapped shards: training windows cross shard boundaries (an empty shard and
# shards shorter than a window among them) exactly as in one concatenated stream, so the same tokens
# in many small shards or in one shard per split give the same metrics and weights; and a run stopped
# and resumed from a checkpoint ends bit for bit where the uninterrupted run ends.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# write_shards DIR NAME SIZE...: one stream of ids below 64 (fixed seed per NAME) cut into shards of
# the given sizes, named DIR/NAME_<i>.bin in stream order.
write_shards() {
  python3 - "$@" <<'PY'
import random, struct, sys
d, name, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
rng = random.Random(name)
ids = [rng.randrange(64) for _ in range(sum(sizes))]
at = 0
for i, n in enumerate(sizes):
    with open("%s/%s_%03d.bin" % (d, name, i), "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
        f.write(struct.pack("<%dH" % n, *ids[at:at + n]))
    at += n
PY
}
mkdir -p "$tmp/many" "$tmp/one"
train_sizes=(0 37 5 300 1 16 0 90 23 3 250 40 7 128)  # 900 tokens; windows are 17
val_sizes=(10 0 50 3 17 1 40 79)                       # 200 tokens
write_shards "$tmp/many" train "${train_sizes[@]}"
write_shards "$tmp/many" val "${val_sizes[@]}"
write_shards "$tmp/one" train 900
write_shards "$tmp/one" val 200
cmp -s <(cat "$tmp"/many/train_*.bin | wc -c) <(echo $((900 * 2 + 1024 * ${#train_sizes[@]}))) ||
  fail "the shard writer wrote the wrong sizes"

cat >"$tmp/tiny.yaml" <<YAML
run: {name: shards, dir: $tmp/full}
seed: 3
device: cpu
data: {kind: tokens, path: $tmp/many}
model: {vocab_size: 64, block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, gate: {kind: output}}
train: {batch_size: 8, max_steps: 10, log_every: 1, threads: 1}
optim: {lr: 3.0e-3, schedule: cosine, warmup_steps: 3}
eval: {every: 3, max_windows: 8}
checkpoint: {every: 3, keep_last: 0}
YAML

out=$("$gattn" train --config "$tmp/tiny.yaml" 2>&1) || fail "the sharded run exited $?: $out"
grep -q "14 train / 8 val shards, vocab 64, 900 train / 200 val tokens" <<<"$out" || fail "no data line: $out"
[[ $(grep -c '"split":"train"' "$tmp/full/metrics.jsonl") -eq 10 ]] || fail "expected 10 train lines"
final=checkpoints/step_00000010

# The same tokens in one shard per split: the same run.
out=$("$gattn" train --config "$tmp/tiny.yaml" data.path="$tmp/one" run.dir="$tmp/whole" 2>&1) ||
  fail "the one-shard run exited $?: $out"
same_metrics "$tmp/full/metrics.jsonl" "$tmp/whole/metrics.jsonl" || fail "many shards and one shard train differently"
same_tensors "$tmp/full/$final/model.safetensors" "$tmp/whole/$final/model.safetensors" ||
  fail "many shards and one shard end with different weights"

# Stopped at step 4 (not a checkpoint step: the stop writes its own checkpoint) and
# resumed: the uninterrupted run's metrics, weights and optimizer state.
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" --stop-after 4 2>&1) || fail "stopped run exited $?: $out"
grep -q "stopped at step 4 of 10" <<<"$out" || fail "no stop message: $out"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" --resume auto 2>&1) || fail "resume exited $?: $out"
grep -q "resumed from $tmp/split/checkpoints/step_00000004 at step 4" <<<"$out" || fail "no resume message: $out"
same_metrics "$tmp/full/metrics.jsonl" "$tmp/split/metrics.jsonl" || fail "resumed metrics differ from the uninterrupted run's"
for f in model.safetensors optimizer.safetensors; do
  same_tensors "$tmp/full/$final/$f" "$tmp/split/$final/$f" || fail "resumed run ends with a different $f"
done

# The shards are mapped, so they need address space: under a `ulimit -v` smaller than a (sparse, 2 GB)
# shard the run stops with a data error before reading a token, not with a crash.
mkdir "$tmp/big"
cp "$tmp/one/val_000.bin" "$tmp/big/"
python3 - "$tmp/big/train_000.bin" <<'PY'
import struct, sys
n = 1_000_000_000
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
    f.truncate(1024 + 2 * n)
PY
err=$( (ulimit -v 1500000; "$gattn" train --config "$tmp/tiny.yaml" data.path="$tmp/big" run.dir="$tmp/big_run" 2>&1 >/dev/null)); rc=$?
[[ $rc -eq 3 ]] || fail "a shard larger than the address space: exit $rc, expected 3: $err"
grep -q "cannot map token shard $tmp/big/train_000.bin (2000001024 bytes) into memory: .*ulimit -v" <<<"$err" ||
  fail "a shard larger than the address space: $err"

# A shard truncated while the run reads it: the mapped pages past its new end would raise SIGBUS (a
# bare "Bus error", exit 135); the run stops with exit 3 naming the shard instead, and its last
# checkpoint loads.
mkdir "$tmp/shrink"
write_shards "$tmp/shrink" train 40000
write_shards "$tmp/shrink" val 200
"$gattn" train --config "$tmp/tiny.yaml" data.path="$tmp/shrink" run.dir="$tmp/shrink_run" train.max_steps=1000000 \
  checkpoint.every=5 checkpoint.keep_last=2 eval.every=0 train.log_every=1000 >/dev/null 2>"$tmp/shrink.err" &
pid=$!
for _ in $(seq 1 1000); do
  [[ -f $tmp/shrink_run/checkpoints/latest ]] && break
  kill -0 "$pid" 2>/dev/null || fail "the run ended before its first checkpoint: $(cat "$tmp/shrink.err")"
  sleep 0.02
done
[[ -f $tmp/shrink_run/checkpoints/latest ]] || fail "no checkpoint within 20 s"
truncate -s 1024 "$tmp/shrink/train_000.bin"
for _ in $(seq 1 500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
kill -KILL "$pid" 2>/dev/null && fail "the run went on reading a truncated shard for 10 s"
wait "$pid"
rc=$?
[[ $rc -eq 3 ]] || fail "a shard truncated during training: exit $rc, expected 3: $(cat "$tmp/shrink.err")"
grep -q "^gattn: token shard $tmp/shrink/train_000.bin could not be read while in use" "$tmp/shrink.err" ||
  fail "the error does not name the shard: $(cat "$tmp/shrink.err")"
write_shards "$tmp/shrink" train 40000
"$gattn" eval --checkpoint "$tmp/shrink_run" data.path="$tmp/shrink" >/dev/null 2>&1 ||
  fail "the last checkpoint of the stopped run does not load"
echo ok
