# Sourced by the multi-process CLI tests (after common.sh): a tiny text config, launching N ranks
# through scripts/launch.sh with the test's gattn binary, and comparing metrics across runs.
launch="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/scripts/launch.sh"
export GATTN_BIN="$gattn" OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
# OpenMPI's session directory under this test's own temporary directory: mpiruns started at the
# same moment (ctest -j, the fault jobs) can race creating a shared one ("orte_session_dir failed").
export OMPI_MCA_orte_tmpdir_base="$tmp"

# write_dist_config FILE RUN_DIR: 2 layers, 32 wide, block 16, output gates (no noise), 4 rows per rank.
write_dist_config() {
  write_verse "$tmp/text.txt"
  cat >"$1" <<YAML
run: {name: dist, dir: $2}
seed: 3
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 32, gate: {kind: output}}
train: {batch_size: 4, max_steps: 20, log_every: 1, threads: 1}
optim:
  lr: 3.0e-3
  schedule: cosine
  warmup_steps: 4
  min_lr: 1.0e-4
  param_groups:
    - {name: gates, match: ["*.attn.gate.*"], lr_scale: 0.5, weight_decay: 0.0, freeze_steps: 3}
eval: {every: 10, max_windows: 8}
checkpoint: {every: 0, keep_last: 0}
dist: {timeout_s: 60}
YAML
}

# ranks N ARGS...: scripts/launch.sh -n N ARGS (output to stdout+stderr).
ranks() {
  local n=$1
  shift
  "$launch" -n "$n" "$@" 2>&1
}

# close_metrics A B [FROM_STEP [NORM_TOL]]: train and val losses, grad norms, lrs and gate means
# (train and val) of two metrics files agree to 1e-5 relative, line by line
# (from FROM_STEP on when given); the timings are left out. NORM_TOL, when given, bounds the
# gradient norms and gate means instead (the device check's looser one,
# tests/emulation/dist_on_device.sh).
close_metrics() {
  python3 - "$1" "$2" "${3:-0}" "${4:-1e-5}" <<'PY'
import json, sys
def lines(path, first):
    out = []
    for line in open(path):
        d = json.loads(line)
        if d["step"] >= first: out.append(d)
    return out
first, norm_tol = int(sys.argv[3]), float(sys.argv[4])
a, b = lines(sys.argv[1], first), lines(sys.argv[2], first)
if len(a) != len(b) or not a:
    print("line counts differ:", len(a), len(b)); sys.exit(1)
worst = {}
for x, y in zip(a, b):
    if (x["step"], x["split"]) != (y["step"], y["split"]):
        print("lines differ:", x["step"], x["split"], "vs", y["step"], y["split"]); sys.exit(1)
    for key, tol in (("loss", 1e-5), ("lr", 1e-5), ("grad_norm", norm_tol), ("gate_mean", norm_tol),
                     ("val_gate_mean", norm_tol)):
        if key in x or key in y:
            u, v = x[key], y[key]
            rel = abs(u - v) / max(abs(u), abs(v), 1e-12)
            worst[key] = max(worst.get(key, 0.0), rel)
            if rel > tol:
                print(f"step {x['step']} {x['split']} {key}: {u} vs {v} (relative {rel:.2e})"); sys.exit(1)
print("max relative difference", ", ".join(f"{k} {v:.1e}" for k, v in worst.items()), f"over {len(a)} lines")
PY
}
