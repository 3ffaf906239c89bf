#!/usr/bin/env bash
# The shipped configs work from a clone of the repository with nothing beside it: every config's
# data path resolves inside the repository (the text ships in data/), so each one trains a step
# from a copy of configs/ and data/ in a folder of its own (a tiny model, to stay quick).
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

clone="$tmp/clone"
mkdir -p "$clone"
mkdir -p "$clone/scripts"
cp -r "$repo/configs" "$repo/data" "$clone/"
# made below, as a user makes them
rm -rf "$clone/data/shakespeare_bpe" "$clone/data/tokenizers" "$clone/data/shakespeare_pairs.tsv"
cp "$repo/scripts/shakespeare_bpe.sh" "$repo/scripts/shakespeare_pairs.sh" "$clone/scripts/"
[[ ! -e $tmp/shared ]] || fail "a ../shared beside the copy would hide a missing path"
cd "$clone" || fail "cannot enter $clone"
tiny=(train.max_steps=1 train.threads=1 model.n_layer=1 model.n_head=2 model.n_embd=16 model.block_size=16
  train.batch_size=2 eval.max_windows=1 checkpoint.every=0)
n=0
for config in configs/quickstart.yaml configs/shakespeare_char/*.yaml; do
  name=$(basename "$config" .yaml)
  out=$("$gattn" train --config "$config" "${tiny[@]}" run.dir="$tmp/runs/$name" 2>&1) ||
    fail "$config from a fresh clone exited $?: $(tail -3 <<<"$out")"
  n=$((n + 1))
done
[[ $n -ge 8 ]] || fail "only $n configs found"
# The BPE configs after their one-line recipe.
out=$(GATTN="$gattn" ./scripts/shakespeare_bpe.sh 2>&1) || fail "scripts/shakespeare_bpe.sh exited $?: $out"
for config in configs/shakespeare_bpe/*.yaml; do
  name=$(basename "$config" .yaml)
  out=$("$gattn" train --config "$config" "${tiny[@]}" run.dir="$tmp/runs/bpe_$name" 2>&1) ||
    fail "$config from a fresh clone exited $?: $(tail -3 <<<"$out")"
  grep -q "vocab 2048" <<<"$out" || fail "$config does not read the 2048-piece shards: $out"
  n=$((n + 1))
done
# The encoder–decoder configs, at a block their sources fit (16 synthetic tokens, text pairs of up to
# 40 bytes); the text pairs after their one-line recipe.
out=$(./scripts/shakespeare_pairs.sh 2>&1) || fail "scripts/shakespeare_pairs.sh exited $?: $out"
for config in configs/seq2seq/*.yaml; do
  name=$(basename "$config" .yaml)
  out=$("$gattn" train --config "$config" "${tiny[@]}" model.block_size=48 run.dir="$tmp/runs/seq2seq_$name" 2>&1) ||
    fail "$config from a fresh clone exited $?: $(tail -3 <<<"$out")"
  grep -q "exact match" <<<"$out" || fail "$config reports no exact match: $out"
  n=$((n + 1))
done
[[ $n -ge 14 ]] || fail "only $n configs found"
echo "cli_fresh_clone_configs: $n configs train from a copy of the repository"
