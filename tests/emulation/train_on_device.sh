#!/usr/bin/env bash
# The emulation build's end-to-end check: `gattn train device=cuda` runs the trainer's whole device
# path on the CPU (pinned batch uploads, every op and the fused AdamW on device tensors, gate
# statistics reduced on the device, evaluation, checkpoints written from device tensors), then
# resumes on the device, and the checkpoint evaluates on the CPU to the loss the device logged.
# For each gate kind that takes a different attention path, and an encoder–decoder (the bidirectional
# and cross-attention calls of the fused op, the source in the pinned upload, gates on the encoder and
# the cross-attention). Usage: train_on_device.sh GATTN
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib/common.sh"

write_tiny_recall "$tmp/tiny.yaml"
for kind in output pair routed seq2seq; do
  dir="$tmp/run_$kind"
  config="$tmp/tiny.yaml"
  args=(model.gate.kind="$kind" run.dir="$dir" train.max_steps=12 train.log_every=4 eval.every=6 checkpoint.every=6)
  if [[ $kind == routed ]]; then args+=("model.gate.windows=[0,4]"); fi
  if [[ $kind == seq2seq ]]; then
    config="$tmp/seq2seq.yaml"
    cat >"$config" <<'YAML'
seed: 0
data: {kind: synthetic, task: reverse, n_pairs: 5}
model:
  arch: encoder_decoder
  block_size: 8
  n_layer: 1
  n_head: 2
  n_embd: 16
  gates: [{kind: context, where: cross}, {kind: score, where: encoder}, {kind: output}]
train: {batch_size: 4, threads: 1}
eval: {max_windows: 8}
YAML
    args=(run.dir="$dir" train.max_steps=12 train.log_every=4 eval.every=6 checkpoint.every=6)
  fi
  out=$("$gattn" train --config "$config" device=cuda "${args[@]}" 2>&1) || fail "$kind: train on the device exited $?: $out"
  grep -q '"gate_mean"' "$dir/metrics.jsonl" || fail "$kind: no gate statistics in the metrics"
  grep -q '"attn_entropy"' "$dir/metrics.jsonl" || fail "$kind: no attention entropy in the metrics"
  [[ $(cat "$dir/checkpoints/latest") == step_00000012 ]] || fail "$kind: latest is $(cat "$dir/checkpoints/latest")"
  if [[ $kind == seq2seq ]]; then
    grep -q '"cross_attn_entropy"' "$dir/metrics.jsonl" || fail "seq2seq: no cross-attention entropy in the metrics"
  fi
  out=$("$gattn" train --config "$config" device=cuda "${args[@]}" train.max_steps=18 --resume auto 2>&1) ||
    fail "$kind: resume on the device exited $?: $out"
  grep -q "resumed from" <<<"$out" || fail "$kind: not resumed: $out"
  # The device's final val loss and the CPU's evaluation of the same checkpoint agree.
  device_loss=$(grep '"split":"val"' "$dir/metrics.jsonl" | tail -1 | sed 's/.*"loss":\([-0-9.e+]*\).*/\1/')
  cpu=$("$gattn" eval --checkpoint "$dir" device=cpu 2>&1) || fail "$kind: eval on the CPU exited $?: $cpu"
  cpu_loss=$(sed 's/.*"loss":\([-0-9.e+]*\).*/\1/' <<<"$cpu")
  python3 -c "import sys; d, c = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(d - c) <= 1e-4 * max(1, abs(c)) else 1)" \
    "$device_loss" "$cpu_loss" || fail "$kind: device val loss $device_loss, CPU eval of its checkpoint $cpu_loss"
done
echo "train_on_device: ok"
