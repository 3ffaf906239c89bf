#!/usr/bin/env bash
# Data parallelism is exact: 2 ranks × batch 4 give the losses (train and val), gradient norms, lrs
# and gate means of 1 rank × batch 8 to 1e-5 relative over 20 steps, with dist.zero 0 and with
# ZeRO-1; only rank 0 writes metrics and checkpoints, and state.json records the world size.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/dist.sh"
write_dist_config "$tmp/tiny.yaml" "$tmp/one"

out=$("$gattn" train --config "$tmp/tiny.yaml" train.batch_size=8 2>&1) || fail "1-rank run exited $?: $out"
grep -q "ranks" <<<"$out" && fail "a plain run should not mention ranks: $out"
single_lines=$(grep -c "^run directory:\|^eval at step\|^final eval" <<<"$out")

out=$(ranks 2 "$tmp/tiny.yaml" run.dir="$tmp/two" dist.zero=0) || fail "2-rank zero 0 run exited $?: $out"
grep -q "2 ranks (mpi, dist.zero 0)" <<<"$out" || fail "no 2-rank banner: $out"
[[ $(grep -c "^run directory:\|^eval at step\|^final eval" <<<"$out") -eq $single_lines ]] ||
  fail "rank 0 alone should print the run's messages: $out"
[[ $(grep -c '"split":"train"' "$tmp/two/metrics.jsonl") -eq 20 ]] || fail "expected 20 train lines (rank 0 only)"
close_metrics "$tmp/one/metrics.jsonl" "$tmp/two/metrics.jsonl" || fail "2 ranks × 4 (zero 0) differ from 1 rank × 8"

out=$(ranks 2 "$tmp/tiny.yaml" run.dir="$tmp/zero" dist.zero=1) || fail "2-rank zero 1 run exited $?: $out"
grep -q "2 ranks (mpi, dist.zero 1)" <<<"$out" || fail "no ZeRO banner: $out"
close_metrics "$tmp/one/metrics.jsonl" "$tmp/zero/metrics.jsonl" || fail "2 ranks × 4 (zero 1) differ from 1 rank × 8"

python3 - "$tmp/zero/checkpoints/step_00000020" "$tmp/one/checkpoints/step_00000020" <<'PY' || fail "checkpoint contents"
import array, json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n]); meta = header.pop("__metadata__")
    out = {}
    for k, v in header.items():
        a = array.array("f"); a.frombytes(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
        out[k] = (v["shape"], a)
    return meta, out
zero, one = sys.argv[1], sys.argv[2]
assert json.load(open(zero + "/state.json"))["world_size"] == 2
assert json.load(open(one + "/state.json"))["world_size"] == 1
# ZeRO-1 stores the gathered moments in the single-process layout, with the single-process values.
mz, oz = tensors(zero + "/optimizer.safetensors")
mo, oo = tensors(one + "/optimizer.safetensors")
assert oz.keys() == oo.keys(), "tensor names differ"
assert json.loads(mz["step_counts"]) == json.loads(mo["step_counts"]), "step counts differ"
for k, (shape, a) in oo.items():
    assert oz[k][0] == shape, k
    for x, y in zip(oz[k][1], a):
        assert abs(x - y) <= 1e-3 * abs(y) + 1e-7, (k, x, y)
PY
echo ok
