#!/usr/bin/env bash
# Damaged checkpoints are refused, never resumed from and never silently replaced by a fresh start:
# a truncated file, a flipped data byte (checksums), a missing tensor, a shape that does not fit
# the config, a damaged state.json, a missing file, a bad `latest`, a config whose model differs
# (hash), an unknown format version, removed checksums, a garbage vocabulary, NaN/Inf weights or
# moments. Each exits 3 with one line naming the file (and the tensor or key), and leaves the run
# directory as it was. A lost `latest` resumes from the newest complete checkpoint and says so.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/checkpoint_edit.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/good}
seed: 1
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, gate: {kind: output}}
train: {batch_size: 4, max_steps: 6, log_every: 1, threads: 1}
optim: {lr: 3.0e-3, warmup_steps: 2}
eval: {every: 0, max_windows: 4}
checkpoint: {every: 2}
YAML
"$gattn" train --config "$tmp/tiny.yaml" --stop-after 4 >/dev/null 2>&1 || fail "could not make the run"
ckpt=checkpoints/step_00000004
[[ -f "$tmp/good/$ckpt/state.json" ]] || fail "no checkpoint at step 4"

# Rewrites a safetensors file with python: `drop` removes a tensor (and its checksum), `reshape`
# gives one tensor another shape of the same size (its checksum still matches its bytes).
edit_safetensors() {  # edit_safetensors FILE drop|reshape TENSOR
  python3 - "$@" <<'PY'
import json, struct, sys
path, action, name = sys.argv[1:4]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n]); data = raw[8 + n:]
meta = header.pop("__metadata__")
if action == "reshape":
    rows, cols = header[name]["shape"]
    header[name]["shape"] = [rows // 2, cols * 2]
    out_data = data
else:
    crc = json.loads(meta["crc32"]); del crc[name]; meta["crc32"] = json.dumps(crc)
    out_data, offset = b"", 0
    for key, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if key == name: continue
        begin, end = entry["data_offsets"]
        out_data += data[begin:end]
        entry["data_offsets"] = [offset, offset + end - begin]
        offset += end - begin
    del header[name]
header = dict(__metadata__=meta, **header)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + out_data)
PY
}
flip_byte_from_end() {  # flip_byte_from_end FILE K: inverts the K-th byte from the end
  python3 - "$1" "$2" <<'PY'
import sys
path, k = sys.argv[1], int(sys.argv[2])
raw = bytearray(open(path, "rb").read()); raw[-k] ^= 0xFF
open(path, "wb").write(bytes(raw))
PY
}

# expect_refused NAME NEEDLE... : resumes a damaged copy made by `damage` (run in the copy); exit 3,
# one line containing every needle, and the copy's files unchanged.
expect_refused() {
  local name=$1
  shift
  local dir="$tmp/$name"
  rm -rf "$dir"
  cp -r "$tmp/good" "$dir"
  (cd "$dir" && damage) || fail "$name: could not damage the copy"
  local before err rc
  before=$(cd "$dir" && find . -type f -exec md5sum {} + | sort)
  err=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$dir" "${extra[@]}" --resume "${resume:-auto}" 2>&1 >/dev/null)
  rc=$?
  [[ $rc -eq 3 ]] || fail "$name: exit $rc, expected 3 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$name: more than one line: $err"
  for needle in "$@"; do grep -qF -- "$needle" <<<"$err" || fail "$name: message lacks '$needle': $err"; done
  [[ $(cd "$dir" && find . -type f -exec md5sum {} + | sort) == "$before" ]] || fail "$name: the run directory changed"
}
extra=()

damage() { truncate -s -100 $ckpt/model.safetensors; }
expect_refused truncated "$ckpt/model.safetensors"
damage() { flip_byte_from_end $ckpt/model.safetensors 3; }
expect_refused flipped_model "$ckpt/model.safetensors" "checksum mismatch" "tensor 'ln_f.bias'"
damage() { flip_byte_from_end $ckpt/optimizer.safetensors 20; }
expect_refused flipped_optimizer "$ckpt/optimizer.safetensors" "checksum mismatch" "exp_avg_sq"
damage() { edit_safetensors $ckpt/model.safetensors drop wpe.weight; }
expect_refused missing_tensor "$ckpt/model.safetensors" "'wpe.weight'"
damage() { edit_safetensors $ckpt/optimizer.safetensors drop ln_f.weight.exp_avg; }
expect_refused missing_moment "$ckpt/optimizer.safetensors" "'ln_f.weight.exp_avg'"
damage() { edit_safetensors $ckpt/model.safetensors reshape wpe.weight; }
expect_refused wrong_shape "$ckpt/model.safetensors" "'wpe.weight'" "[8, 32]" "[16, 16]"
damage() { sed -i 's/"step": 4,/"step": 5,/' $ckpt/state.json; }
expect_refused flipped_state "$ckpt/state.json" "checksum mismatch"
damage() { head -c 200 $ckpt/state.json >s && mv s $ckpt/state.json; }
expect_refused truncated_state "$ckpt/state.json"
damage() { rm $ckpt/optimizer.safetensors; }
expect_refused missing_file "$ckpt/optimizer.safetensors"
damage() { echo step_00000099 >checkpoints/latest; }
expect_refused latest_missing_dir "checkpoints/latest" "step_00000099"
damage() { printf 'garbage\0' >checkpoints/latest; }
expect_refused latest_garbage "checkpoints/latest"
damage() { printf 'step_00000004\ngarbage\n' >checkpoints/latest; }
expect_refused latest_trailing_garbage "checkpoints/latest" "more than a checkpoint name"
damage() { set_metadata $ckpt/model.safetensors format gattn/99; }
expect_refused unknown_format "$ckpt/model.safetensors" "format 'gattn/99'"
damage() { set_metadata $ckpt/optimizer.safetensors format gattn/2; }
expect_refused unknown_optimizer_format "$ckpt/optimizer.safetensors" "format 'gattn/2'"
damage() { set_metadata $ckpt/model.safetensors vocab garbage; }
expect_refused garbage_vocab "$ckpt/model.safetensors" '"vocab"'
damage() { set_metadata $ckpt/model.safetensors vocab '[10, 32, 32]'; }
expect_refused repeated_vocab "$ckpt/model.safetensors" '"vocab"'
damage() { poison_tensor $ckpt/model.safetensors wpe.weight nan; }
expect_refused nan_weight "$ckpt/model.safetensors" "tensor 'wpe.weight' holds NaN or Inf"
damage() { poison_tensor $ckpt/optimizer.safetensors ln_f.bias.exp_avg_sq inf; }
expect_refused inf_moment "$ckpt/optimizer.safetensors" "tensor 'ln_f.bias.exp_avg_sq' holds NaN or Inf"
# `latest` lost and every checkpoint damaged: refused naming them, never a fresh start.
damage() { rm checkpoints/latest; truncate -s -100 checkpoints/step_0000000{2,4}/model.safetensors; }
expect_refused latest_lost_all_damaged "checkpoints/latest is missing" "none of the 2 checkpoint directories" \
  "step_00000004, step_00000002"
damage() { :; }
extra=(model.n_layer=3)
expect_refused changed_model "$ckpt/state.json" "config hash" "model.n_layer: 2 -> 3"
extra=(data.kind=synthetic)
expect_refused changed_data "$ckpt/state.json" "config hash" "data.kind"
extra=()
resume="$tmp/nowhere"
expect_refused missing_dir "$tmp/nowhere"
resume=""

# A lost `latest` (a crash between a checkpoint's rename and `latest`, a deleted file) resumes from
# the newest complete checkpoint, skipping damaged ones, and says so; the metrics before it stay.
expect_resumed_without_latest() {  # expect_resumed_without_latest NAME STEP NEEDLE
  local dir="$tmp/$1"
  rm -rf "$dir"
  cp -r "$tmp/good" "$dir"
  (cd "$dir" && damage) || fail "$1: could not damage the copy"
  local kept out
  kept=$(grep -c "\"step\":[1-$2]," "$dir/metrics.jsonl")
  out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$dir" --resume auto 2>&1) || fail "$1: exit $?: $out"
  grep -qF "checkpoints/latest is missing; resuming from the newest complete checkpoint, step_0000000$2" <<<"$out" ||
    fail "$1: did not say where it resumed from: $out"
  grep -qF "$3" <<<"$out" || fail "$1: output lacks '$3': $out"
  grep -q "resumed from .*step_0000000$2 at step $2" <<<"$out" || fail "$1: did not resume at step $2: $out"
  [[ $(grep -c "\"step\":[1-$2]," "$dir/metrics.jsonl") -eq $kept ]] || fail "$1: the metrics up to step $2 changed"
  [[ $(cat "$dir/checkpoints/latest") == "step_00000006" ]] || fail "$1: the resumed run did not finish"
}
damage() { rm checkpoints/latest; }
expect_resumed_without_latest latest_lost 4 "step_00000004"
damage() { rm checkpoints/latest; truncate -s -100 checkpoints/step_00000004/model.safetensors; }
expect_resumed_without_latest latest_lost_newest_damaged 2 "(skipped, damaged: step_00000004)"

# The intact run still resumes (the checks above are not simply refusing everything).
"$gattn" train --config "$tmp/tiny.yaml" --resume auto >/dev/null 2>&1 || fail "the intact run did not resume"
[[ $(cat "$tmp/good/checkpoints/latest") == "step_00000006" ]] || fail "the intact run did not finish"
echo ok
