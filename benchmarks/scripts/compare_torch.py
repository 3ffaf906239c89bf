#!/usr/bin/python3
"""Training throughput of gattn against PyTorch (eager, and torch.compile with --compile) on the
same model, data and threads.

Runs, one after the other in one invocation, for every thread count in --threads:
  1. PyTorch eager (and compiled with --compile): gattn's GPT (docs/architecture.md) with the config's gate
     (none, output, score, forget or pair; score/forget/pair by the eager formula that materialises
     the T×T scores, as PyTorch must), AdamW with the config's parameter groups, random windows of the
     char-level text, N steps;
  2. `build/gattn train` on the same config for N steps;
and prints the steady-state training tokens/s of both and the ratios. gattn at t threads is set
against PyTorch's best at any listed count ≤ t, so PyTorch is compared at its best thread count.
The default config is configs/shakespeare_char/output.yaml (4 layers, 4 heads, 128 wide, block 64,
batch 12, output gates); --set KEY=VALUE changes the config for both (e.g. a longer block).

It also states the peer's configuration: PyTorch's version, its parallel backend, the BLAS it was
built for and the BLAS and OpenMP libraries actually loaded into the process (Debian picks the
pthread OpenBLAS over the OpenMP one when both are installed, and that variant fights PyTorch's
OpenMP pool: it runs ~3× slower at 2 threads, so the script says so loudly), and gattn's BLAS line.

  /usr/bin/python3 benchmarks/scripts/compare_torch.py [--config FILE] [--steps 300] [--threads 1,2]
  venv/bin/python benchmarks/scripts/compare_torch.py --compile --repeat 5 --steps 200
  /usr/bin/python3 benchmarks/scripts/compare_torch.py --config configs/shakespeare_char/score.yaml \
      --set model.block_size=256 --set train.batch_size=3

Run it with Debian's /usr/bin/python3 (python3-torch lives there, not in a pyenv Python), or with
a virtual environment's python that has pip's torch and pyyaml (the newest PyTorch, MKL and oneDNN
inside; --compile also times torch.compile, which needs a PyTorch 2). `./scripts/setup.sh --bench`
installs python3-torch and the OpenMP OpenBLAS. GATTN_BINARY names another gattn binary (default
build/gattn).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

TWINS = ("none", "output", "score", "forget", "pair")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_config(path):
    import yaml  # python3-yaml, a dependency of python3-torch's tooling on Debian

    with open(path) as f:
        return yaml.safe_load(f)


def apply_sets(cfg, sets):
    """KEY=VALUE overrides (dotted keys, YAML values) on the loaded config, as gattn applies them."""
    import yaml

    for item in sets:
        key, _, value = item.partition("=")
        node = cfg
        *parents, leaf = key.split(".")
        for k in parents:
            node = node.setdefault(k, {})
        node[leaf] = yaml.safe_load(value)
    return cfg


def torch_peer_description():
    """What PyTorch runs on here: version, threads backend, BLAS built for and loaded."""
    import torch

    x = torch.randn(64, 64)
    (x @ x).sum()  # makes sure the BLAS library is loaded before /proc/self/maps is read
    config = torch.__config__.show()
    blas_info = re.search(r"BLAS_INFO=([^,\s]+)", config)
    loaded = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if line.strip() else ""
            name = os.path.basename(path)
            if re.search(r"(blas|blis|mkl|gomp|iomp|dnnl)", name):
                loaded.add(os.path.realpath(path))
    libs = sorted(loaded)
    backend = "OpenMP" if "ATen parallel backend: OpenMP" in torch.__config__.parallel_info() else "other"
    variant = "unknown BLAS"
    # Debian's variants live in their own folders (both libraries are named libopenblasp-r*.so).
    if any("/openblas-openmp/" in p for p in libs):
        variant = "OpenBLAS, OpenMP build"
    elif any("/openblas-pthread/" in p for p in libs):
        variant = "OpenBLAS, pthread build"
    elif any("mkl" in p for p in libs):
        variant = "MKL"
    elif any("blis" in p for p in libs):
        variant = "BLIS"
    elif blas_info and blas_info.group(1) == "mkl" and torch.backends.mkl.is_available():
        variant = "MKL, linked into libtorch_cpu"  # pip's wheels: no MKL library of its own to find
    warning = None
    if variant == "OpenBLAS, pthread build":
        warning = ("WARNING: PyTorch loaded the pthread OpenBLAS, which fights its OpenMP pool (~3x slower at 2 "
                   "threads); install libopenblas0-openmp (./scripts/setup.sh --bench) for a fair comparison")
    text = (f"PyTorch {torch.__version__}, parallel backend {backend}, built for BLAS "
            f"{blas_info.group(1) if blas_info else '?'}, running on {variant}: " + ", ".join(libs))
    return text, variant, warning


def gattn_description(binary):
    """gattn's GEMM library, BLAS and OpenMP wait policy, from `gattn --version`."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    info = dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)
    return (f"gattn ({binary}): f32 GEMM {info.get('gemm f32', '?')}, BLAS {info.get('blas', '?')}, "
            f"OpenMP wait {info.get('openmp wait', '?')}")


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


def torch_tokens_per_s(cfg, steps, threads, warmup, schedule=False, compiled=False):
    """Trains `steps` steps; returns (tokens/s after `warmup` steps, last loss, val loss or None).
    compiled=True runs the model through torch.compile (Inductor's default mode); its compilation
    falls in the untimed warm-up steps.
    With schedule=True the lr follows the config's schedule over `steps` and the model is evaluated
    on the val windows of docs/cli.md (the first eval.max_windows windows of T+1 tokens at stride T)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    seed = cfg.get("seed", 0)
    torch.manual_seed(seed)
    m = cfg["model"]
    T, L, H, C = m["block_size"], m["n_layer"], m["n_head"], m["n_embd"]
    kind = m.get("gate", {}).get("kind", "none")
    if kind not in TWINS:
        sys.exit(f"compare_torch: gate kind {kind!r} has no PyTorch twin here ({', '.join(TWINS)})")
    text = open(os.path.join(ROOT, cfg["data"]["path"]), "rb").read()
    vocab = sorted(set(text))
    lut = {b: i for i, b in enumerate(vocab)}
    tokens = torch.tensor([lut[b] for b in text], dtype=torch.long)
    data, val = tokens[: int(0.9 * len(text))], tokens[int(0.9 * len(text)) :]
    V = len(vocab)
    d = C // H

    class Gate(nn.Module):
        """The gate's parameters under the names gattn gives them (attn.gate.*), initialised alike:
        normal(0, 0.02) weights; forget's bias 3, others 0; pair's alpha logit(0.5) = 0."""

        def __init__(self):
            super().__init__()
            if kind == "output":
                self.weight, self.bias = nn.Parameter(torch.empty(C, C)), nn.Parameter(torch.zeros(C))
            elif kind in ("score", "forget"):
                self.weight = nn.Parameter(torch.empty(H, C))
                self.bias = nn.Parameter(torch.full((H,), 3.0 if kind == "forget" else 0.0))
            else:  # pair
                self.wq, self.wk = nn.Parameter(torch.empty(H, d)), nn.Parameter(torch.empty(H, d))
                self.bias, self.alpha = nn.Parameter(torch.zeros(H)), nn.Parameter(torch.zeros(1))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.gate = Gate() if kind != "none" else None
            self.fc, self.mproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

        def attend(self, h, q, k, v):
            """Causal attention with the score/forget/pair terms; PyTorch has no fused kernel that
            takes them, so the T×T scores are materialised (F.scaled_dot_product_attention only
            exists from 2.0, and then only for the ungated case)."""
            if kind in ("none", "output") and hasattr(F, "scaled_dot_product_attention"):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            g = self.gate
            if kind in ("score", "forget"):
                log_gate = F.logsigmoid(F.linear(h, g.weight, g.bias)).transpose(1, 2)  # [B, H, T]
                if kind == "score":
                    s = s + log_gate[..., None, :]
                else:
                    c = torch.cumsum(log_gate, dim=-1)
                    s = s + (c[..., :, None] - c[..., None, :])
            a = F.softmax(s.masked_fill(self.mask, float("-inf")), dim=-1)
            if kind == "pair":
                row = (q * g.wq.view(1, H, 1, d)).sum(-1) + g.bias.view(1, H, 1)
                col = (k * g.wk.view(1, H, 1, d)).sum(-1)
                alpha = torch.sigmoid(g.alpha)
                a = a * (alpha * torch.sigmoid(row[..., :, None] + col[..., None, :]) + (1 - alpha))
            return a @ v

        def forward(self, x):
            B = x.shape[0]
            h = self.ln1(x)
            q, k, v = self.qkv(h).split(C, dim=2)
            q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in (q, k, v))
            y = self.attend(h, q, k, v).transpose(1, 2).reshape(B, T, C)
            if kind == "output":
                y = y * torch.sigmoid(F.linear(h, self.gate.weight, self.gate.bias))
            x = x + self.proj(y)
            return x + self.mproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C)
            # GPT-2 initialisation as gattn's (models/README.md): normal(0, 0.02), residual projections at
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
    if compiled:
        # Each run defines its own GPT class, which Dynamo counts as a recompilation of forward: after
        # config.recompile_limit (8) of them it would silently run eager. Start each run afresh.
        torch._dynamo.reset()
    step_model = torch.compile(model) if compiled else model
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
        loss = step_model(x, y)
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


def gattn_binary():
    binary = os.environ.get("GATTN_BINARY", os.path.join(ROOT, "build", "gattn"))
    if not os.path.exists(binary):
        sys.exit(f"compare_torch: {binary} is missing; run ./scripts/build.sh first")
    return binary


def gattn_tokens_per_s(config, cfg, sets, steps, threads, warmup):
    binary = gattn_binary()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        cmd = [binary, "train", "--config", config, f"run.dir={run_dir}", f"train.max_steps={steps}",
               f"train.threads={threads}", "train.log_every=10", "eval.every=0", "eval.max_windows=1",
               "checkpoint.every=0", *sets]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        lines = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    train = [l for l in lines if l["split"] == "train"]
    # elapsed_s at two logged steps: the tokens between them over the time between them.
    first = next(l for l in train if l["step"] >= warmup)
    last = train[-1]
    tokens_per_step = cfg["train"]["batch_size"] * cfg["model"]["block_size"] * cfg["train"].get("grad_accum", 1)
    rate = tokens_per_step * (last["step"] - first["step"]) / (last["elapsed_s"] - first["elapsed_s"])
    return rate, last["loss"]


def thread_counts(text):
    counts = sorted({int(t) for t in text.split(",") if t.strip()})
    if not counts or counts[0] < 1:
        sys.exit(f"compare_torch: --threads wants positive counts like 1,2, not {text!r}")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/shakespeare_char/output.yaml"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override for both sides (repeatable), e.g. model.block_size=256")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20, help="steps excluded from the timing")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run both sides this many times in turn and report each side's median (default 1)")
    ap.add_argument("--compile", action="store_true",
                    help="also time PyTorch with torch.compile in each round; PyTorch's best is then the faster "
                         "of eager and compiled")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--seed", type=int, help="PyTorch's seed (default: the config's)")
    ap.add_argument("--train-to-end", action="store_true",
                    help="parity check instead: PyTorch trains the config's train.max_steps with its schedule "
                         "and prints the val loss over the eval windows (docs/run-directory.md), to set beside "
                         "gattn's")
    args = ap.parse_args()
    import torch

    cfg = apply_sets(load_config(args.config), args.set)
    if args.seed is not None:
        cfg["seed"] = args.seed
    counts = thread_counts(args.threads)
    peer, variant, warning = torch_peer_description()
    if args.train_to_end:
        steps = cfg["train"]["max_steps"]
        t_rate, t_loss, val = torch_tokens_per_s(cfg, steps, counts[-1], args.warmup, schedule=True)
        print(f"{os.path.relpath(args.config, ROOT)}: PyTorch {torch.__version__} eager, seed {cfg.get('seed', 0)}, "
              f"{steps} steps, {counts[-1]} threads: val loss {val:.4f}, {t_rate:.0f} tokens/s")
        return
    rows = []
    for t in counts:
        # --repeat N: the two sides alternate N times and each reports its median run, so a drift in
        # the machine's speed hits both alike.
        t_runs, c_runs, g_runs = [], [], []
        for _ in range(args.repeat):
            t_runs.append(torch_tokens_per_s(cfg, args.steps, t, args.warmup))
            if args.compile:
                c_runs.append(torch_tokens_per_s(cfg, args.steps, t, args.warmup, compiled=True))
            g_runs.append(gattn_tokens_per_s(args.config, cfg, args.set, args.steps, t, args.warmup))
        median = lambda runs: sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        t_rate, t_loss, _ = median(t_runs)
        g_rate, g_loss = median(g_runs)
        row = {"threads": t, "torch_tokens_per_s": round(t_rate), "gattn_tokens_per_s": round(g_rate),
               "torch_runs": [round(r[0]) for r in t_runs], "gattn_runs": [round(r[0]) for r in g_runs],
               "torch_final_loss": round(t_loss, 4), "gattn_final_loss": round(g_loss, 4)}
        if c_runs:
            row["torch_compiled_tokens_per_s"] = round(median(c_runs)[0])
            row["torch_compiled_runs"] = [round(r[0]) for r in c_runs]
        rows.append(row)
    best_of = lambda r: max(r["torch_tokens_per_s"], r.get("torch_compiled_tokens_per_s", 0))
    for r in rows:
        # PyTorch at its best: the fastest of its medians (eager or compiled) with at most this many threads.
        best = max((x for x in rows if x["threads"] <= r["threads"]), key=best_of)
        r["torch_best_threads"] = best["threads"]
        r["torch_best_mode"] = "eager" if best["torch_tokens_per_s"] >= best_of(best) else "compiled"
        r["speedup_vs_same_threads"] = round(r["gattn_tokens_per_s"] / best_of(r), 2)
        r["speedup_vs_torch_best"] = round(r["gattn_tokens_per_s"] / best_of(best), 2)
    m = cfg["model"]
    shape = (f"{m['n_layer']} layers, {m['n_head']} heads, {m['n_embd']} wide, block {m['block_size']}, "
             f"batch {cfg['train']['batch_size']}, gate {m.get('gate', {}).get('kind', 'none')}")
    result = {"config": os.path.relpath(args.config, ROOT), "sets": args.set, "model": shape, "steps": args.steps,
              "torch_version": torch.__version__, "torch_blas": variant, "peer": peer,
              "gattn": gattn_description(gattn_binary()), "rows": rows}
    runs = f", median of {args.repeat} alternating runs" if args.repeat > 1 else ""
    print(f"{result['config']} {' '.join(args.set)}: {shape}; {args.steps} steps, first {args.warmup} untimed{runs}")
    print(f"  peer:  {peer}")
    print(f"  gattn: {result['gattn']}")
    if warning:
        print(f"  {warning}")
    print()
    compiled_head = " PyTorch torch.compile tokens/s |" if args.compile else ""
    print(f"| threads | PyTorch eager tokens/s |{compiled_head} gattn tokens/s | gattn / PyTorch (same threads) | "
          "gattn / PyTorch at its best |")
    print("| --- | --- |" + (" --- |" if args.compile else "") + " --- | --- | --- |")
    for r in rows:
        spread = lambda runs: f" ({min(runs):,}–{max(runs):,})" if len(runs) > 1 else ""
        compiled_cell = (f" {r['torch_compiled_tokens_per_s']:,}{spread(r['torch_compiled_runs'])} |"
                         if args.compile else "")
        print(f"| {r['threads']} | {r['torch_tokens_per_s']:,}{spread(r['torch_runs'])} |{compiled_cell} "
              f"{r['gattn_tokens_per_s']:,}{spread(r['gattn_runs'])} | "
              f"{r['speedup_vs_same_threads']:.2f}x | {r['speedup_vs_torch_best']:.2f}x "
              f"(PyTorch {r['torch_best_mode']} at {r['torch_best_threads']} "
              f"thread{'s' if r['torch_best_threads'] > 1 else ''}) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
