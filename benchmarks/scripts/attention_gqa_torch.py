#!/usr/bin/env python3
"""Grouped-query attention on the CPU: gattn's fused attention beside PyTorch's SDPA with enable_gqa (docs/benchmarks.md).

For every thread count and key/value head count it times causal attention forward and backward on
random q [B, H, T, d] and k, v [B, H_kv, T, d] (query head h reads key/value head h / (H / H_kv)),
the output's heads merged into [B, T, H·d], gradients to q, k, v; the backward is
out.backward(grad) with a random grad of that shape. The peers, in one invocation:

  gattn    `gattn bench attention --device cpu --kinds none --kv-heads ... --json` with
           OMP_NUM_THREADS=n (GatedAttention::attend without a gate: ops::flash_attention reading
           each key/value head in place, then the heads merged);
  PyTorch  F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), heads merged,
           under torch.set_num_threads(n), restricted to the flash backend where it takes the case
           (else the math backend; a PyTorch without enable_gqa gets k, v repeated per query head);
           the table names the path that ran.

It prints one markdown table (and writes it to --out): fwd and bwd ms and fwd+bwd GFLOP/s of each
peer, the ratio gattn/torch and PyTorch's path, then the goal's verdict: at each thread count,
gattn's forward + backward with fewer key/value heads is no slower than with H_kv = H (the goal
names H_kv = 2 of H = 8 at T = 1024, d = 64). FLOPs as `gattn bench attention`: forward
4·B·H·T²·d/2, backward 2.5× that, H counting query heads whatever H_kv. Batch = max(1, tokens / T),
as benchmarks/scripts/attention_torch.py chooses it.

  python3 benchmarks/scripts/attention_gqa_torch.py          # T 1024, 8x64, H_kv 8,2,1, 1 and 2 threads
  python3 benchmarks/scripts/attention_gqa_torch.py --T 256 --heads-dim 4x32 --kv-heads 4,1 --tokens 512
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gattn", help="the gattn binary (default: build/gattn)")
    p.add_argument("--T", type=int, default=1024)
    p.add_argument("--heads-dim", default="8x64", help="query heads x head dim")
    p.add_argument("--kv-heads", default="8,2,1", help="key/value head counts, each dividing H")
    p.add_argument("--tokens", type=int, default=16384, help="batch = max(1, tokens / T)")
    p.add_argument("--threads", default="1,2", help="thread counts, each run by both peers")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--gattn-timeout", type=float, default=900.0, help="seconds for each gattn run")
    p.add_argument("--out", help="also write the table and verdicts to this markdown file")
    a = p.parse_args()
    try:
        a.H, a.d = (int(x) for x in a.heads_dim.split("x"))
        a.kv_list = [int(x) for x in a.kv_heads.split(",")]
        a.thread_list = [int(x) for x in a.threads.split(",")]
    except ValueError as e:
        p.error(f"bad --heads-dim, --kv-heads or --threads: {e}")
    if min([a.T, a.H, a.d, a.tokens] + a.kv_list + a.thread_list) < 1 or any(a.H % kv for kv in a.kv_list):
        p.error("--T, --heads-dim, --tokens, --threads must be positive and every --kv-heads must divide H")
    if a.iters < 1 or a.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    a.B = max(1, a.tokens // a.T)
    if a.gattn is None:
        a.gattn = os.path.join(ROOT, "build/gattn")
        if not os.access(a.gattn, os.X_OK):
            p.error("no gattn binary in build/: pass --gattn")
    return a


def fwd_flops(a):
    return 4.0 * a.B * a.H * a.T * a.T * a.d / 2.0


# ---------------------------------------------------------------- gattn

def run_gattn(a, threads):
    """{H_kv: result dict} of one gattn run on `threads` threads."""
    cmd = [a.gattn, "bench", "attention", "--json", "--device", "cpu", "--dtype", "f32", "--kinds", "none",
           "--T", str(a.T), "--heads-dim", a.heads_dim, "--kv-heads", a.kv_heads, "--tokens", str(a.tokens),
           "--warmup", str(a.warmup), "--iters", str(a.iters)]
    print(f"$ OMP_NUM_THREADS={threads} " + " ".join(cmd), flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.gattn_timeout)
    except subprocess.TimeoutExpired:
        return {kv: {"status": "timeout"} for kv in a.kv_list}
    if proc.returncode != 0:
        sys.exit(f"gattn bench attention failed (exit {proc.returncode}): {proc.stderr.strip()}")
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[r["H_kv"]] = r
    return {kv: results.get(kv, {"status": "missing"}) for kv in a.kv_list}


# ---------------------------------------------------------------- PyTorch

def sdpa_context(backend):
    """A context restricting SDPA to one backend ('flash' or 'math'); None before PyTorch 2.3."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION if backend == "flash" else SDPBackend.MATH)


def has_enable_gqa():
    if not hasattr(F, "scaled_dot_product_attention"):
        return False
    q = torch.zeros(1, 2, 2, 4)
    k = torch.zeros(1, 1, 2, 4)
    try:
        F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        return True
    except TypeError:
        return False


def manual_sdpa(q, k, v):
    """Causal attention by the formula: PyTorch before 2.0 has no F.scaled_dot_product_attention."""
    T = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def merge_heads(y):
    B, H, T, d = y.shape
    return y.transpose(1, 2).reshape(B, T, H * d)


def time_case(fn, leaves, grad, a):
    fwd, bwd = [], []
    for it in range(a.warmup + a.iters):
        for x in leaves:
            x.grad = None
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        out.backward(grad)
        t2 = time.perf_counter()
        if it >= a.warmup:
            fwd.append((t1 - t0) * 1e3)
            bwd.append((t2 - t1) * 1e3)
    fwd.sort(), bwd.sort()
    return fwd[len(fwd) // 2], bwd[len(bwd) // 2]


def torch_case(a, kv, gqa):
    g = torch.Generator().manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, generator=g)
    q = rnd(a.B, a.H, a.T, a.d).requires_grad_(True)
    k, v = (rnd(a.B, kv, a.T, a.d).requires_grad_(True) for _ in range(2))
    grad = rnd(a.B, a.T, a.H * a.d)
    group = a.H // kv
    version = torch.__version__.split("+")[0]
    r = {"status": "ok"}
    if not hasattr(F, "scaled_dot_product_attention"):
        fn = lambda: merge_heads(manual_sdpa(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)))
        r["fwd_ms"], r["bwd_ms"] = time_case(fn, [q, k, v], grad, a)
        r["path"] = f"math formula on repeated k, v (no SDPA in torch {version})"
        return r
    if gqa:
        fn = lambda: merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
        label = "sdpa enable_gqa"
    else:  # the copy is part of what is timed, as it is of a model that makes it
        fn = lambda: merge_heads(F.scaled_dot_product_attention(
            q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), is_causal=True))
        label = f"sdpa on repeated k, v (no enable_gqa in torch {version})"
    if sdpa_context("flash") is None:
        r["fwd_ms"], r["bwd_ms"] = time_case(fn, [q, k, v], grad, a)
        r["path"] = label + ", default backend"
        return r
    try:
        with sdpa_context("flash"):
            r["fwd_ms"], r["bwd_ms"] = time_case(fn, [q, k, v], grad, a)
        r["path"] = label + ", flash (cpu)"
    except RuntimeError:  # no flash kernel for this case: the math backend, said so
        with sdpa_context("math"):
            r["fwd_ms"], r["bwd_ms"] = time_case(fn, [q, k, v], grad, a)
        r["path"] = label + ", math (flash unavailable)"
    return r


def run_torch(a, threads, gqa):
    torch.set_num_threads(threads)
    out = {}
    for kv in a.kv_list:
        out[kv] = torch_case(a, kv, gqa)
        r = out[kv]
        print(f"torch {threads} thread(s) H_kv={kv}: {r['fwd_ms']:.1f} + {r['bwd_ms']:.1f} ms ({r['path']})",
              flush=True)
    return out


# ---------------------------------------------------------------- report

def gflops(a, r):
    return 3.5 * fwd_flops(a) / ((r["fwd_ms"] + r["bwd_ms"]) * 1e-3) / 1e9 if "fwd_ms" in r else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def report(a, g, t):
    lines = [f"Grouped-query attention, gattn vs PyTorch {torch.__version__} on the CPU ({os.cpu_count()} cores), f32, "
             f"causal, B = {a.B}, T = {a.T}, {a.H}×{a.d}; median of {a.iters} iterations after {a.warmup} warm-up; "
             "GFLOP/s of forward+backward with 4·B·H·T²·d/2 forward and 2.5× that backward", "",
             "| threads | H×d | H_kv | T | B | gattn fwd ms | gattn bwd ms | gattn GFLOP/s | torch fwd ms | torch bwd ms "
             "| torch GFLOP/s | gattn/torch | torch path |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in a.thread_list:
        for kv in a.kv_list:
            gr, tr = g[n][kv], t[n][kv]
            gg, tg = gflops(a, gr), gflops(a, tr)
            ratio = f"{gg / tg:.2f}×" if gg and tg else "-"
            status = "" if gr.get("status") == "ok" else f" ({gr.get('status')})"
            lines.append(f"| {n} | {a.H}×{a.d} | {kv} | {a.T} | {a.B} | {fmt(gr.get('fwd_ms'), '.1f')} | "
                         f"{fmt(gr.get('bwd_ms'), '.1f')}{status} | {fmt(gg, '.1f')} | {fmt(tr.get('fwd_ms'), '.1f')} | "
                         f"{fmt(tr.get('bwd_ms'), '.1f')} | {fmt(tg, '.1f')} | {ratio} | {tr['path']} |")
    lines += ["", "Goal: gattn's forward + backward with fewer key/value heads no slower than with H_kv = H:"]
    for n in a.thread_list:
        full = g[n].get(a.H)
        for kv in a.kv_list:
            if kv == a.H:
                continue
            r = g[n][kv]
            if not full or "fwd_ms" not in full or "fwd_ms" not in r:
                lines.append(f"- {n} thread(s), H_kv = {kv}: not measured (H_kv = {a.H} missing or a case failed)")
                continue
            ms, ms_full = r["fwd_ms"] + r["bwd_ms"], full["fwd_ms"] + full["bwd_ms"]
            lines.append(f"- {n} thread(s), H_kv = {kv}: {'PASS' if ms <= ms_full else 'FAIL'} ({ms:.1f} ms against "
                         f"{ms_full:.1f} ms with H_kv = {a.H}, {ms / ms_full:.3f}×)")
    return "\n".join(lines) + "\n"


def main():
    a = parse_args()
    gqa = has_enable_gqa()
    g = {n: run_gattn(a, n) for n in a.thread_list}
    t = {n: run_torch(a, n, gqa) for n in a.thread_list}
    text = report(a, g, t)
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
