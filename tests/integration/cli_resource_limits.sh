#!/usr/bin/env bash
# Input gattn refuses (docs/cli.md): settings that ask for more than the machine has. Thread counts above
# the cores are clamped with one line (a 64-thread run under a memory limit used to spin forever);
# sizes whose memory cannot fit (block_size 1e9, n_embd 2e6, a trillion sampled tokens, a
# 70-million-cell grid, a bench shape) exit 2 naming the setting instead of "std::bad_alloc".
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"

write_tiny_recall "$tmp/tiny.yaml"
cores=$(nproc)

# Threads: clamped to the cores, said in one line, and the run trains.
for threads in 64 1000; do
  (( threads > cores )) || continue
  out=$( (ulimit -v 4000000; timeout 60 "$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/t$threads" \
          train.threads=$threads train.max_steps=5) 2>&1); rc=$?
  [[ $rc -eq 0 ]] || fail "train.threads=$threads under ulimit -v: exit $rc: $out"
  grep -q "train.threads $threads is more than the $cores cores this process may use; using $cores" <<<"$out" ||
    fail "train.threads=$threads: no line saying it was clamped: $out"
done
expect 2 "train.threads must be >= 0" train --config "$tmp/tiny.yaml" run.dir="$tmp/t" train.threads=-1
# tokenize's --threads likewise (a count no machine can start used to segfault, or abort in libgomp
# or SentencePiece's trainer).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
head -c 60000 "$repo/data/tinyshakespeare.txt" >"$tmp/corpus.txt"
for threads in 200 100000; do
  (( threads > cores )) || continue
  out=$( (ulimit -v 4000000; timeout 60 "$gattn" tokenize train --input "$tmp/corpus.txt" --vocab-size 400 \
          --out "$tmp/tok$threads" --threads $threads) 2>&1); rc=$?
  [[ $rc -eq 0 ]] || fail "tokenize train --threads $threads: exit $rc: $out"
  grep -q "tokenize train --threads $threads is more than the $cores cores this process may use; using $cores" \
    <<<"$out" || fail "tokenize train --threads $threads: no line saying it was clamped: $out"
  out=$( (ulimit -v 4000000; timeout 60 "$gattn" tokenize encode --tokenizer "$tmp/tok$threads" \
          --input "$tmp/corpus.txt" --out "$tmp/shards$threads" --threads $threads) 2>&1); rc=$?
  [[ $rc -eq 0 ]] || fail "tokenize encode --threads $threads: exit $rc: $out"
  grep -q "tokenize encode --threads $threads is more than the $cores cores" <<<"$out" ||
    fail "tokenize encode --threads $threads: no line saying it was clamped: $out"
done
expect 2 "tokenize encode --threads must be >= 1" tokenize encode --tokenizer "$tmp/tok200" --input "$tmp/corpus.txt" \
  --out "$tmp/shards_bad" --threads -1

# Model sizes: refused before anything is allocated or written.
expect 2 "model.block_size 1000000000: needs about" train --config "$tmp/tiny.yaml" run.dir="$tmp/m1" model.block_size=1000000000
expect 2 "model.n_embd 2000000: needs about" train --config "$tmp/tiny.yaml" run.dir="$tmp/m1" model.n_embd=2000000 model.n_head=1
[[ ! -e "$tmp/m1" ]] || fail "a refused model size left a run directory"
"$make_checkpoint" "$tmp/ckpt" output || fail "could not make a checkpoint"
expect 2 "model.block_size 1000000000: needs about" eval --checkpoint "$tmp/ckpt" model.block_size=1000000000

# Sampling keeps every drawn id: a trillion of them is refused up front.
expect 2 "max-new-tokens 1000000000000: needs about" sample --checkpoint "$tmp/ckpt" --prompt ab --max-new-tokens 1000000000000

# A grid of 70 million cells (100 x 100 x 100 x 70), every one a run: refused before it is expanded.
{
  echo "base: $tmp/tiny.yaml"
  echo "grid:"
  for key in seed optim.lr train.batch_size; do
    printf '  %s: [%s]\n' "$key" "$(seq -s, 1 100)"
  done
  printf '  train.max_steps: [%s]\n' "$(seq -s, 1 70)"
} >"$tmp/grid.yaml"
expect 2 "the grid has 70000000 cells (100 x 100 x 100 x 70 values)" ablate --config "$tmp/grid.yaml" run.dir="$tmp/grid"

# A bench shape whose inputs cannot fit.
expect 2 "\-\-T 1000000 with --heads-dim 16x64 and --tokens 1000000000000" bench attention --device cpu --kinds none \
  --T 1000000 --heads-dim 16x64 --tokens 1000000000000
echo ok
