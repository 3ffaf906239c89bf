#!/usr/bin/env bash
# Resume on another world size: a 2-rank ZeRO-1 run killed mid-way (a rank SIGKILLed after the
# step-6 checkpoint) continues on 1 rank, and a 1-rank run stopped at step 6 continues on 2 ranks
# under ZeRO-1 (moments re-sharded); both give the uninterrupted run's losses to 1e-5 relative.
# The global batch stays 8 rows (batch_size 8 on 1 rank, 4 on 2), the data position is global.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/dist.sh"
write_dist_config "$tmp/tiny.yaml" "$tmp/ref"
short=(train.max_steps=12 checkpoint.every=3 eval.every=4)

out=$("$gattn" train --config "$tmp/tiny.yaml" "${short[@]}" train.batch_size=8 2>&1) || fail "reference run exited $?: $out"

# 2 → 1: rank 1 is killed at the start of step 8; the job dies, `latest` is the step-6 checkpoint.
out=$(GATTN_TEST_FAULT=1:8:kill ranks 2 "$tmp/tiny.yaml" "${short[@]}" run.dir="$tmp/down" dist.zero=1)
rc=$?
((rc != 0)) || fail "a job with a killed rank exited 0: $out"
[[ $(cat "$tmp/down/checkpoints/latest") == "step_00000006" ]] || fail "latest after the kill: $(cat "$tmp/down/checkpoints/latest")"
out=$("$gattn" train --config "$tmp/tiny.yaml" "${short[@]}" run.dir="$tmp/down" train.batch_size=8 --resume auto 2>&1) ||
  fail "1-rank resume of a 2-rank checkpoint exited $?: $out"
grep -q "written by 2 rank(s); continuing on 1" <<<"$out" || fail "no world-size message: $out"
close_metrics "$tmp/ref/metrics.jsonl" "$tmp/down/metrics.jsonl" || fail "2 -> 1 resume differs from the uninterrupted run"

# 1 → 2: stopped at step 6 on one rank, continued on two with ZeRO-1.
out=$("$gattn" train --config "$tmp/tiny.yaml" "${short[@]}" run.dir="$tmp/up" train.batch_size=8 --stop-after 6 2>&1) ||
  fail "1-rank stopped run exited $?: $out"
out=$(ranks 2 "$tmp/tiny.yaml" "${short[@]}" run.dir="$tmp/up" dist.zero=1 --resume auto) ||
  fail "2-rank resume of a 1-rank checkpoint exited $?: $out"
grep -q "written by 1 rank(s); continuing on 2 (optimizer state re-sharded)" <<<"$out" || fail "no re-shard message: $out"
close_metrics "$tmp/ref/metrics.jsonl" "$tmp/up/metrics.jsonl" || fail "1 -> 2 resume differs from the uninterrupted run"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['world_size'] == 2" \
  "$tmp/up/checkpoints/step_00000012/state.json" || fail "final state.json should record 2 ranks"
echo ok
