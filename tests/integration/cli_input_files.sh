#!/usr/bin/env bash
# Input gattn refuses (docs/cli.md): every file gattn reads (config, ablation file, text data, token
# shards, checkpoints/latest, a checkpoint's files) must be a regular file. A FIFO is refused at
# once instead of hanging, /dev/zero instead of being read until memory runs out, a config larger
# than a config is refused by size; a file-system error (a symlink loop) exits 3 naming the path.
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"

mkfifo "$tmp/fifo"
mkdir "$tmp/shards" && mkfifo "$tmp/shards/x_train.bin" "$tmp/shards/x_val.bin"
write_tiny_recall "$tmp/tiny.yaml"
write_verse "$tmp/text.txt"

# Config and ablation files: exit 2.
expect 2 "config file $tmp/fifo: it is a FIFO" train --config "$tmp/fifo"
expect 2 "config file /dev/zero: it is a character device" train --config /dev/zero
head -c 5000000 /dev/zero | tr '\0' '#' >"$tmp/huge.yaml"
expect 2 "more than the 4194304" train --config "$tmp/huge.yaml"
expect 2 "ablation file $tmp/fifo: it is a FIFO" ablate --config "$tmp/fifo"
# (/dev/null stays the empty config it always was: cli_inspect.sh trains with --config /dev/null.)

# Data: exit 3, nothing written.
expect 3 "text data file $tmp/fifo: it is a FIFO" train --config "$tmp/tiny.yaml" run.dir="$tmp/r1" data.kind=text data.path="$tmp/fifo"
expect 3 "text data file /dev/zero: it is a character device" train --config "$tmp/tiny.yaml" run.dir="$tmp/r1" data.kind=text data.path=/dev/zero
expect 3 "token shard $tmp/shards/x_train.bin: it is a FIFO" train --config "$tmp/tiny.yaml" run.dir="$tmp/r1" \
  data.kind=tokens data.path="$tmp/shards/*.bin"
[[ ! -e "$tmp/r1" ]] || fail "a refused data path left a run directory"

# checkpoints/latest and a checkpoint's files: exit 3, whether it is read by eval, sample or --resume.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run" train.max_steps=2 >/dev/null 2>&1 || fail "tiny run failed"
mv "$tmp/run/checkpoints/latest" "$tmp/latest.saved"
mkfifo "$tmp/run/checkpoints/latest"
expect 3 "checkpoint pointer $tmp/run/checkpoints/latest: it is a FIFO" eval --checkpoint "$tmp/run"
expect 3 "it is a FIFO" train --config "$tmp/tiny.yaml" run.dir="$tmp/run" train.max_steps=4 --resume auto
rm "$tmp/run/checkpoints/latest"
ln -s /dev/zero "$tmp/run/checkpoints/latest"
expect 3 "checkpoint pointer $tmp/run/checkpoints/latest: it is a character device" sample --checkpoint "$tmp/run" --prompt-tokens "1 2"
rm "$tmp/run/checkpoints/latest"
mv "$tmp/latest.saved" "$tmp/run/checkpoints/latest"
step="$tmp/run/checkpoints/step_00000002"
mv "$step/state.json" "$tmp/state.saved" && mkfifo "$step/state.json"
expect 3 "state.json.*it is a FIFO" inspect --checkpoint "$step"
rm "$step/state.json" && mv "$tmp/state.saved" "$step/state.json"
mv "$step/model.safetensors" "$tmp/model.saved" && mkfifo "$step/model.safetensors"
expect 3 "model.safetensors.*it is a FIFO" eval --checkpoint "$step"
rm "$step/model.safetensors"

# A symlink loop where the checkpoint's weights should be: exit 3 naming the path (was "internal
# error: filesystem error", exit 2).
ln -s model.safetensors "$step/model.safetensors"  # a link to itself
expect 3 "$step/model.safetensors" inspect --checkpoint "$step"
expect 3 "$step/model.safetensors" eval --checkpoint "$step"
ln -s "$tmp/loop_a" "$tmp/loop_b" && ln -s "$tmp/loop_b" "$tmp/loop_a"
expect 3 "$tmp/loop_a" inspect --checkpoint "$tmp/loop_a"
expect 3 "$tmp/loop_a" eval --checkpoint "$tmp/loop_a"
echo ok
