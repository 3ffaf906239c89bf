#!/usr/bin/python3
"""Step-level parity of gattn against an independent PyTorch implementation (f64) of models/README.md.

Takes a gattn checkpoint (model.safetensors, optimizer.safetensors, state.json), draws one batch of
training windows, and has both implementations do one training step on it from the same state:

  1. the loss and every parameter's gradient (gattn f32 against PyTorch f64),
  2. the parameters after global-norm clipping and one AdamW step from the checkpoint's moments at
     the checkpoint's step (the schedule's lr, the config's groups and weight decay).

It prints the worst relative differences. A model whose math matches models/README.md shows gradients equal
to a few 1e-6 (f32 rounding); the update matches to about 1e-3 of its size except for the key third
of each `attn.qkv.bias`, whose exact gradient is zero (a key bias adds the same q·b to every score of
a row, which softmax ignores) so that Adam normalises pure rounding noise there in both frameworks.

  /usr/bin/python3 benchmarks/scripts/step_parity.py runs/NAME/checkpoints/step_00001000

Needs build/benchmarks/gattn_step_dump (built with the benchmarks) and Debian's python3-torch (gate kinds
`none` and `output`, text data).
"""
import argparse
import fnmatch
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32}


def load_safetensors(path):
    """(tensors by name as numpy arrays, metadata) of a safetensors file, with plain numpy."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        tensors[name] = np.frombuffer(raw[8 + n + lo : 8 + n + hi], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def torch_loss(params, cfg, x, y):
    """models/README.md's forward (gate kinds none and output) in PyTorch on the given parameters."""
    import torch
    import torch.nn.functional as F

    m = cfg["model"]
    B, T = x.shape
    H, C = m["n_head"], m["n_embd"]
    d = C // H

    def ln(h, p):
        return F.layer_norm(h, (C,), params[p + ".weight"], params[p + ".bias"], 1e-5)

    def linear(h, p):
        return h @ params[p + ".weight"].t() + params[p + ".bias"]

    h = params["wte.weight"][x] + params["wpe.weight"][torch.arange(T)]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for i in range(m["n_layer"]):
        pre = f"blocks.{i}."
        a = ln(h, pre + "ln1")
        q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in linear(a, pre + "attn.qkv").split(C, 2))
        att = torch.softmax(((q @ k.transpose(-1, -2)) / math.sqrt(d)).masked_fill(mask, float("-inf")), -1)
        out = (att @ v).transpose(1, 2).reshape(B, T, C)
        if pre + "attn.gate.weight" in params:
            out = out * torch.sigmoid(linear(a, pre + "attn.gate"))
        h = h + linear(out, pre + "attn.proj")
        h = h + linear(F.gelu(linear(ln(h, pre + "ln2"), pre + "mlp.fc"), approximate="tanh"), pre + "mlp.proj")
    logits = ln(h, "ln_f") @ params["wte.weight"].t()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def scheduled_lr(o, max_steps, step):
    lr, warm, low = o["lr"], o.get("warmup_steps", 100), o.get("min_lr", 0.0)
    if step < warm:
        return lr * (step + 1) / warm
    if o.get("schedule", "cosine") != "cosine":
        return lr
    if step >= max_steps:
        return low
    return low + 0.5 * (1 + math.cos(math.pi * (step - warm) / (max_steps - warm))) * (lr - low)


def group_of(name, groups):
    for g in groups:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in g["match"]):
            return g
    return {}


def rel_diff(a, b):
    return float(np.abs(a - b).max() / (np.abs(a).max() + 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="a checkpoint directory (model, optimizer, state.json)")
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1, help="seed of the batch's window starts")
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "benchmarks", "gattn_step_dump"))
    args = ap.parse_args()
    import torch

    weights, meta = load_safetensors(os.path.join(args.checkpoint, "model.safetensors"))
    moments, opt_meta = load_safetensors(os.path.join(args.checkpoint, "optimizer.safetensors"))
    step = json.load(open(os.path.join(args.checkpoint, "state.json")))["step"]
    cfg = json.loads(meta["config"])
    if cfg["model"].get("gate", {}).get("kind", "none") not in ("none", "output") or cfg["data"]["kind"] != "text":
        sys.exit("step_parity: only text data and gate kinds none/output have a PyTorch twin here")
    vocab = json.loads(meta["vocab"])
    lut = np.zeros(256, dtype=np.int32)
    lut[vocab] = np.arange(len(vocab))
    data = np.frombuffer(open(os.path.join(ROOT, cfg["data"]["path"]), "rb").read(), dtype=np.uint8)
    tokens = lut[data[: int(0.9 * len(data))]]
    T, B = cfg["model"]["block_size"], args.batch_size
    starts = np.random.default_rng(args.seed).integers(0, len(tokens) - T - 1, B)
    x = np.stack([tokens[s : s + T] for s in starts]).astype(np.int32)
    y = np.stack([tokens[s + 1 : s + T + 1] for s in starts]).astype(np.int32)

    with tempfile.TemporaryDirectory() as tmp:
        batch = os.path.join(tmp, "batch.bin")
        with open(batch, "wb") as f:
            f.write(np.array([B, T], dtype="<i4").tobytes() + x.tobytes() + y.tobytes())
        if not os.path.exists(args.tool):
            sys.exit(f"step_parity: {args.tool} is missing; build the tests (./scripts/build.sh)")
        run = subprocess.run([args.tool, args.checkpoint, batch, tmp], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"step_parity: gattn_step_dump failed: {run.stderr.strip()}")
        g_out = json.loads(run.stdout)
        g_grads, _ = load_safetensors(os.path.join(tmp, "grads.safetensors"))
        g_updated, _ = load_safetensors(os.path.join(tmp, "updated.safetensors"))

    params = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in weights.items()}
    loss = torch_loss(params, cfg, torch.tensor(x, dtype=torch.long), torch.tensor(y, dtype=torch.long))
    loss.backward()
    grads = {k: p.grad.numpy() for k, p in params.items()}
    print(f"loss       gattn {g_out['loss']:.9f}  PyTorch f64 {loss.item():.9f}")
    worst = max((rel_diff(grads[k], g_grads[k].astype(np.float64)), k) for k in grads)
    print(f"gradients  worst relative difference {worst[0]:.2e} ({worst[1]})")

    o = cfg["optim"]
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads.values()))
    lr = scheduled_lr(o, cfg["train"]["max_steps"], step)
    print(f"grad norm  gattn {g_out['grad_norm']:.7f}  PyTorch {norm:.7f};  lr at step {step}: "
          f"gattn {g_out['lr']:.9g}  formula {lr:.9g}")
    clip = min(1.0, o.get("grad_clip", 1.0) / (norm + 1e-6)) if o.get("grad_clip", 1.0) > 0 else 1.0
    (b1, b2), eps = o.get("betas", [0.9, 0.999]), o.get("eps", 1e-8)
    counts = json.loads(opt_meta["step_counts"])
    C = cfg["model"]["n_embd"]
    results = []
    for k, w in weights.items():
        group = group_of(k, o.get("param_groups", []))
        wd = group.get("weight_decay", o.get("weight_decay", 0.0))
        group_lr = group["lr"] if "lr" in group else lr * group.get("lr_scale", 1.0)
        g = grads[k] * clip
        t = counts[k] + 1
        m = b1 * moments[k + ".exp_avg"] + (1 - b1) * g
        v = b2 * moments[k + ".exp_avg_sq"] + (1 - b2) * g * g
        expected = w * (1 - group_lr * wd) - group_lr / (1 - b1**t) * m / (np.sqrt(v) / math.sqrt(1 - b2**t) + eps)
        delta_torch, delta_gattn = expected - w, g_updated[k].astype(np.float64) - w
        if k.endswith("attn.qkv.bias"):  # the key third: zero exact gradient, see the docstring
            keep = np.r_[0:C, 2 * C : 3 * C]
            delta_torch, delta_gattn = delta_torch[keep], delta_gattn[keep]
        results.append((rel_diff(delta_torch, delta_gattn), k))
    worst = max(results)
    print(f"AdamW step worst relative difference of the update {worst[0]:.2e} ({worst[1]})")


if __name__ == "__main__":
    main()
