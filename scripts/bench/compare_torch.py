#!/usr/bin/python3
"""Training throughput of gattn against PyTorch eager on the same model, data and threads.

Runs, one after the other in one invocation:
  1. PyTorch eager (Debian's python3-torch): the SPEC §4 GPT with the config's gate (none or output),
     AdamW with the config's parameter groups, random windows of the char-level text, N steps;
  2. `build/gattn train` on the same config for N steps;
and prints the steady-state training tokens/s of both and the ratio. The default config is
configs/shakespeare_char/output.yaml (the issue's reference model: 4 layers, 4 heads, 128 wide,
block 64, batch 12, output gates).

  /usr/bin/python3 scripts/bench/compare_torch.py [--config FILE] [--steps 300] [--threads 2]

Run it with Debian's /usr/bin/python3 (python3-torch lives there, not in a pyenv Python).
`./scripts/setup.sh --bench` installs python3-torch.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_config(path):
    import yaml  # python3-yaml, a dependency of python3-torch's tooling on Debian

    with open(path) as f:
        return yaml.safe_load(f)


def scheduled_lr(o, steps, step):
    """gattn's schedule (framework/optim/schedule.cpp): linear warm-up, then cosine to min_lr."""
    lr, warm = o["lr"], o.get("warmup_steps", 100)
    if step < warm:
        return lr * (step + 1) / warm
    if o.get("schedule", "cosine") != "cosine":
        return lr
    r = (step - warm) / max(1, steps - warm)
    return o.get("min_lr", 0.0) + 0.5 * (1 + math.cos(math.pi * r)) * (lr - o.get("min_lr", 0.0))


def gate_lr_scale(cfg):
    for g in cfg["optim"].get("param_groups", []):
        if any(".gate." in m for m in g.get("match", [])):
            return g.get("lr_scale", 1.0)
    return 1.0


def torch_tokens_per_s(cfg, steps, threads, warmup, schedule=False):
    """Trains `steps` steps; returns (tokens/s after `warmup` steps, last loss, val loss or None).
    With schedule=True the lr follows the config's schedule over `steps` and the model is evaluated
    on SPEC §5's val windows (the first eval.max_windows windows of T+1 tokens at stride T)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    seed = cfg.get("seed", 0)
    torch.manual_seed(seed)
    m = cfg["model"]
    T, L, H, C = m["block_size"], m["n_layer"], m["n_head"], m["n_embd"]
    kind = m.get("gate", {}).get("kind", "none")
    if kind not in ("none", "output"):
        sys.exit(f"compare_torch: gate kind {kind!r} has no PyTorch twin here (none, output)")
    text = open(os.path.join(ROOT, cfg["data"]["path"]), "rb").read()
    vocab = sorted(set(text))
    lut = {b: i for i, b in enumerate(vocab)}
    tokens = torch.tensor([lut[b] for b in text], dtype=torch.long)
    data, val = tokens[: int(0.9 * len(text))], tokens[int(0.9 * len(text)) :]
    V = len(vocab)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.gate = nn.Linear(C, C) if kind == "output" else None
            self.fc, self.mproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

        def forward(self, x):
            B = x.shape[0]
            h = self.ln1(x)
            q, k, v = self.qkv(h).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0: its fused kernels
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # Debian 12's PyTorch 1.13: nanoGPT's explicit attention
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
                att = F.softmax(att.masked_fill(self.mask, float("-inf")), dim=-1)
                y = att @ v
            y = y.transpose(1, 2).reshape(B, T, C)
            if self.gate is not None:
                y = y * torch.sigmoid(self.gate(h))
            x = x + self.proj(y)
            return x + self.mproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C)
            # GPT-2 initialisation as gattn's (SPEC §4): normal(0, 0.02), residual projections at
            # 0.02/√(2L), zero biases.
            for n, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if n.endswith(("proj.weight", "mproj.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif n.endswith("bias") and not n.startswith("ln") and ".ln" not in n:
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    model = GPT()
    o = cfg["optim"]
    gates = [p for n, p in model.named_parameters() if ".gate." in n]
    no_decay = [p for n, p in model.named_parameters()
                if ".gate." not in n and (n.endswith("bias") or "ln" in n or n.startswith(("wte", "wpe")))]
    taken = {id(p) for p in gates + no_decay}
    rest = [p for p in model.parameters() if id(p) not in taken]
    groups = [{"params": rest, "weight_decay": o.get("weight_decay", 0.1)},
              {"params": no_decay, "weight_decay": 0.0}]
    if gates:
        groups.append({"params": gates, "weight_decay": 0.0, "lr_scale": gate_lr_scale(cfg)})
    for grp in groups:
        grp.setdefault("lr_scale", 1.0)
    opt = torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o.get("betas", [0.9, 0.99])))
    B = cfg["train"]["batch_size"]
    g = torch.Generator().manual_seed(seed)
    start = None
    for step in range(steps):
        if step == warmup:
            start = time.perf_counter()
        if schedule:
            for grp in opt.param_groups:
                grp["lr"] = scheduled_lr(o, steps, step) * grp["lr_scale"]
        ix = torch.randint(len(data) - T - 1, (B,), generator=g)
        x = torch.stack([data[i : i + T] for i in ix])
        y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.get("grad_clip", 1.0))
        opt.step()
    seconds = time.perf_counter() - start
    val_loss = None
    if schedule:
        windows = (len(val) - 1) // T
        windows = min(windows, cfg.get("eval", {}).get("max_windows", 200) or windows)
        total = 0.0
        with torch.no_grad():
            for first in range(0, windows, B):
                rows = range(first, min(windows, first + B))
                x = torch.stack([val[w * T : w * T + T] for w in rows])
                y = torch.stack([val[w * T + 1 : w * T + T + 1] for w in rows])
                total += float(model(x, y)) * len(rows)
        val_loss = total / windows
    return B * T * (steps - warmup) / seconds, float(loss), val_loss


def gattn_tokens_per_s(config, steps, threads, warmup):
    binary = os.path.join(ROOT, "build", "gattn")
    if not os.path.exists(binary):
        sys.exit("compare_torch: build/gattn is missing; run ./scripts/build.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        cmd = [binary, "train", "--config", config, f"run.dir={run_dir}", f"train.max_steps={steps}",
               f"train.threads={threads}", "train.log_every=10", "eval.every=0", "eval.max_windows=1",
               "checkpoint.every=0"]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        lines = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    train = [l for l in lines if l["split"] == "train"]
    # elapsed_s at two logged steps: the tokens between them over the time between them.
    first = next(l for l in train if l["step"] >= warmup)
    last = train[-1]
    cfg = load_config(config)
    tokens_per_step = cfg["train"]["batch_size"] * cfg["model"]["block_size"] * cfg["train"].get("grad_accum", 1)
    rate = tokens_per_step * (last["step"] - first["step"]) / (last["elapsed_s"] - first["elapsed_s"])
    return rate, last["loss"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/shakespeare_char/output.yaml"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20, help="steps excluded from the timing")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--seed", type=int, help="PyTorch's seed (default: the config's)")
    ap.add_argument("--train-to-end", action="store_true",
                    help="parity check instead: PyTorch trains the config's train.max_steps with its schedule "
                         "and prints the val loss over SPEC §5's eval windows, to set beside gattn's")
    args = ap.parse_args()
    import torch

    cfg = load_config(args.config)
    if args.seed is not None:
        cfg["seed"] = args.seed
    if args.train_to_end:
        steps = cfg["train"]["max_steps"]
        t_rate, t_loss, val = torch_tokens_per_s(cfg, steps, args.threads, args.warmup, schedule=True)
        print(f"{os.path.relpath(args.config, ROOT)}: PyTorch {torch.__version__} eager, seed {cfg.get('seed', 0)}, "
              f"{steps} steps, {args.threads} threads: val loss {val:.4f}, {t_rate:.0f} tokens/s")
        return
    t_rate, t_loss, _ = torch_tokens_per_s(cfg, args.steps, args.threads, args.warmup)
    g_rate, g_loss = gattn_tokens_per_s(args.config, args.steps, args.threads, args.warmup)
    result = {"config": os.path.relpath(args.config, ROOT), "steps": args.steps, "threads": args.threads,
              "torch_version": torch.__version__, "torch_tokens_per_s": round(t_rate),
              "gattn_tokens_per_s": round(g_rate), "speedup": round(g_rate / t_rate, 2),
              "torch_final_loss": round(t_loss, 4), "gattn_final_loss": round(g_loss, 4)}
    print(f"{result['config']}, {args.steps} steps, {args.threads} threads")
    print(f"  PyTorch {torch.__version__} eager: {t_rate:9.0f} tokens/s (loss {t_loss:.3f})")
    print(f"  gattn:                {g_rate:9.0f} tokens/s (loss {g_loss:.3f})")
    print(f"  gattn / PyTorch:      {g_rate / t_rate:9.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
