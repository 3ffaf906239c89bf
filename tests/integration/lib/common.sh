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

# Train lines without their timings, and val lines, of two metrics files must be equal.
same_metrics() {  # same_metrics A B
  python3 - "$1" "$2" <<'PY'
import json, sys
def lines(path):
    out = []
    for line in open(path):
        d = json.loads(line)
        d.pop("tokens_per_s", None); d.pop("elapsed_s", None)
        out.append(d)
    return out
a, b = lines(sys.argv[1]), lines(sys.argv[2])
if a != b:
    for x, y in zip(a, b):
        if x != y: print("first difference:\n  ", x, "\n  ", y); break
    else: print("lengths differ:", len(a), len(b))
    sys.exit(1)
PY
}
# The tensor bytes of two safetensors files (the headers differ: they hold run.dir) must be equal.
same_tensors() {  # same_tensors A B
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n]); header.pop("__metadata__", None)
    return {k: (v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in header.items()}
sys.exit(0 if tensors(sys.argv[1]) == tensors(sys.argv[2]) else 1)
PY
}
