# Sourced by the CLI tests in tests/integration/ (this folder is not globbed as tests): a temporary
# directory removed on exit, fail(), and a small text corpus for tiny training runs.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# write_verse FILE: 60 numbered lines of one verse, ~3000 bytes over 27 distinct bytes.
write_verse() { for i in $(seq 1 60); do echo "To be, or not to be, that is the question: $i"; done >"$1"; }
# write_tiny_recall FILE: a training config that runs in about a second (noisy_recall, 2 layers of
# width 16, 30 steps, one thread); gate kind, run.dir and the rest come as overrides.
write_tiny_recall() {
  cat >"$1" <<'YAML'
seed: 0
device: cpu
data: {kind: synthetic, task: noisy_recall, n_pairs: 2}
model: {block_size: 12, n_layer: 2, n_head: 2, n_embd: 16}
train: {batch_size: 8, max_steps: 30, log_every: 10, threads: 1}
optim: {lr: 3.0e-3}
eval: {every: 0, max_windows: 16}
checkpoint: {every: 0}
YAML
}
