#!/usr/bin/env python3
"""gattn's gated attention against PyTorch on the same shapes, in one run (docs/benchmarks.md).

For every gate kind and shape it times a block's attention with its gate, as the model runs it
between the qkv and output projections (GatedAttention::attend), forward and backward: the gate's
own small products are inside the timed region. Inputs are random normal h [B, T, C] (C = H·d) and
q, k, v [B, H, T, d]; the gate's parameters are initialised as the model does (weights
normal(0, 0.02), biases 0 except forget's 3.0, pair's alpha 0), in the inputs' dtype. Gradients
flow to h, q, k, v and the gate's parameters; the output is [B, T, C] (head n in columns
n·d … n·d + d − 1) and the backward is out.backward(grad) with a random grad of that shape.

  gattn    `gattn bench attention --json` (GatedAttention::attend: the gate's terms, then
           ops::flash_attention on whatever backend it dispatches to);
  PyTorch  none/output: F.scaled_dot_product_attention(q, k, v, is_causal=True) restricted to the
           flash backend, heads merged; output then multiplies by σ(h·Wᵀ + b), W [C, C], b [C];
           score/forget on the CPU: the faster of SDPA with the gate as an additive float mask
           (the causal −∞ and log σ(f_jn), or c_i − c_j, materialised [B, H, T, T]: SDPA's CPU
           flash kernel takes a float mask) and the eager formula;
           score/forget/pair: the eager formula that materialises the T×T scores, with per head n
             f = h·Wᵀ + b (W [H, C], b [H]: f [B, T, H]),
             S = q kᵀ/√d,  score: + log σ(f_jn),  forget: + c_i − c_j with c = cumsum_t log σ(f),
             causal mask,  P = softmax(S),
             pair: P ⊙ (α·σ(a_i + c_j) + 1 − α) with a_i = q_i·wq_n + b_n, c_j = k_j·wk_n on the
               unscaled q, k (wq, wk [H, d], b [H]) and α = σ(alpha), no renormalisation,
             y = P v, heads merged.

It prints one markdown table (TFLOP/s of forward+backward, the ratio gattn/torch, the PyTorch path)
and a verdict per goal (docs/benchmarks.md). On the GPU: none/output ≥ 0.8× flash SDPA;
score/forget/pair ≥ 3× eager at T = 4k; score/forget/pair run at T = 16k. On the CPU (`--threads`
runs every case at each thread count, gattn with OMP_NUM_THREADS, PyTorch with set_num_threads):
none/output ≥ 1.5× SDPA at T ≥ 1024, score/forget/pair ≥ 3× PyTorch's best expression at T ≥ 1024. FLOPs: forward 4·B·H·T²·d halved for the causal mask,
backward 2.5× forward, for every kind; the gate's own work (its projections, sigmoids, cumsum and
products) is timed but not counted.

  python3 benchmarks/scripts/attention_torch.py --out bench_attention.md                 # the GPU, bf16
  python3 benchmarks/scripts/attention_torch.py --device cpu --T 256,1024,4096 --heads-dim 8x64 \
      --tokens 4096 --threads 1,2

On the CPU it computes in f32; PyTorch without SDPA (1.13) or without a flash CPU kernel uses the
math formula instead, and the table says which path ran. gattn runs first, in its own process, so
that PyTorch's cached GPU memory never competes with it.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

KINDS = ["none", "output", "score", "forget", "pair"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gattn", help="the gattn binary (default: build-gpu/gattn, else build/gattn)")
    p.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda when available")
    p.add_argument("--dtype", choices=["bf16", "f32"], help="default: bf16 on cuda, f32 on cpu")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--T", default="1024,4096,16384")
    p.add_argument("--heads-dim", default="16x64,8x128")
    p.add_argument("--tokens", type=int, default=16384, help="batch = max(1, tokens / T)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--max-iter-s", type=float, default=5.0,
                   help="a PyTorch case whose first iteration takes longer is reported from that one iteration")
    p.add_argument("--gattn-timeout", type=float, default=600.0,
                   help="seconds for the gattn run; cases not finished by then are reported as timeout")
    p.add_argument("--torch-budget", type=float, default=600.0,
                   help="seconds for all PyTorch cases; the ones not started by then are skipped")
    p.add_argument("--threads", help="CPU: thread counts, comma-separated (every case at each); default: "
                   "PyTorch's and OpenMP's defaults")
    p.add_argument("--out", help="also write the table and verdicts to this markdown file")
    a = p.parse_args()
    if a.device is None:
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: PyTorch sees no CUDA device")
    if a.dtype is None:
        a.dtype = "bf16" if a.device == "cuda" else "f32"
    if a.dtype == "bf16" and a.device == "cpu":
        p.error("--dtype bf16: gattn's CPU attention computes in f32 only")
    try:
        a.kind_list = a.kinds.split(",")
        a.T_list = [int(t) for t in a.T.split(",")]
        a.hd_list = [tuple(int(x) for x in hd.split("x")) for hd in a.heads_dim.split(",")]
    except ValueError as e:
        p.error(f"bad list: {e}")
    try:
        a.thread_list = [int(t) for t in a.threads.split(",")] if a.threads else [None]
    except ValueError as e:
        p.error(f"bad --threads: {e}")
    if a.device == "cuda" and a.threads:
        p.error("--threads: CPU only")
    bad = [k for k in a.kind_list if k not in KINDS]
    if bad or min(a.T_list) < 1 or any(len(hd) != 2 or min(hd) < 1 for hd in a.hd_list) or a.tokens < 1:
        p.error("bad --kinds, --T, --heads-dim or --tokens")
    if a.iters < 1 or a.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    if a.gattn is None:
        for cand in ("build-gpu/gattn", "build/gattn"):
            if os.access(os.path.join(ROOT, cand), os.X_OK):
                a.gattn = os.path.join(ROOT, cand)
                break
        else:
            p.error("no gattn binary in build-gpu/ or build/: pass --gattn")
    return a


def cases(a):
    # The order of `gattn bench attention`: head shapes, then T, then kinds.
    return [(k, max(1, a.tokens // T), T, H, d) for (H, d) in a.hd_list for T in a.T_list for k in a.kind_list]


def fwd_flops(B, T, H, d):
    return 4.0 * B * H * T * T * d / 2.0


# ---------------------------------------------------------------- gattn

def run_gattn(a, threads=None):
    """{(kind, B, T, H, d): result dict}; cases the run did not reach get status 'timeout'."""
    cmd = [a.gattn, "bench", "attention", "--json", "--device", a.device, "--dtype", a.dtype, "--kinds", a.kinds,
           "--T", a.T, "--heads-dim", a.heads_dim, "--tokens", str(a.tokens), "--warmup", str(a.warmup),
           "--iters", str(a.iters)]
    print("$ " + " ".join(cmd), flush=True)
    results = {}
    # Its own session, so a timeout kills gattn and anything it started; the lines it printed
    # before (one per finished case, flushed) are kept.
    env = dict(os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {}))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)

    def stop(signum, frame):  # an outer `timeout` stops us: gattn, in its own session, must go too
        os.killpg(proc.pid, signal.SIGKILL)
        sys.exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        out, err = proc.communicate(timeout=a.gattn_timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err, rc = f"timed out after {a.gattn_timeout:.0f} s", None
    finally:
        signal.signal(signal.SIGTERM, previous)
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        results[(r["kind"], r["B"], r["T"], r["H"], r["d"])] = r
    if rc != 0:
        print(f"gattn bench: {'exit ' + str(rc) if rc is not None else ''} {err.strip()}", file=sys.stderr)
        if rc is not None and not results:
            sys.exit(f"gattn bench attention failed (exit {rc}): {err.strip()}")
    for c in cases(a):
        results.setdefault(c, {"status": "timeout" if rc is None else "missing"})
    return results


# ---------------------------------------------------------------- PyTorch

def sdpa_context(backend):
    """A context restricting SDPA to one backend ('flash' or 'math'), across PyTorch 2.x versions."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # 2.3+
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION if backend == "flash" else SDPBackend.MATH)
    except ImportError:
        flash = backend == "flash"
        return torch.backends.cuda.sdp_kernel(enable_flash=flash, enable_math=not flash, enable_mem_efficient=False)


def manual_sdpa(q, k, v):
    """Causal attention by the formula: PyTorch 1.13 has no F.scaled_dot_product_attention."""
    T = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def merge_heads(y):
    """[B, H, T, d] -> [B, T, H·d], head n in columns n·d … n·d + d − 1."""
    B, H, T, d = y.shape
    return y.transpose(1, 2).reshape(B, T, H * d)


def eager(kind, h, q, k, v, p, hidden):
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if kind in ("score", "forget"):
        log_gate = F.logsigmoid(F.linear(h, p["weight"], p["bias"])).transpose(1, 2)  # [B, H, T]
        if kind == "score":
            s = s + log_gate[..., None, :]
        else:
            c = torch.cumsum(log_gate, dim=-1)
            s = s + (c[..., :, None] - c[..., None, :])
    a = torch.softmax(s.masked_fill(hidden, float("-inf")), dim=-1)
    if kind == "pair":
        H, d = p["wq"].shape
        row = (q * p["wq"].view(1, H, 1, d)).sum(-1) + p["bias"].view(1, H, 1)  # a_i, [B, H, T]
        col = (k * p["wk"].view(1, H, 1, d)).sum(-1)  # c_j, [B, H, T]
        alpha = torch.sigmoid(p["alpha"])
        a = a * (alpha * torch.sigmoid(row[..., :, None] + col[..., None, :]) + (1 - alpha))
    return merge_heads(a @ v)


def gate_mask(kind, h, p, hidden):
    """score/forget as an additive float mask [B, H, T, T]: the causal −∞ plus log σ(f_j), or c_i − c_j."""
    log_gate = F.logsigmoid(F.linear(h, p["weight"], p["bias"])).transpose(1, 2)  # [B, H, T]
    if kind == "score":
        m = log_gate[..., None, :].expand(*log_gate.shape[:2], log_gate.shape[-1], log_gate.shape[-1])
    else:
        c = torch.cumsum(log_gate, dim=-1)
        m = c[..., :, None] - c[..., None, :]
    return m.masked_fill(hidden, float("-inf"))


def make_inputs(kind, B, T, H, d, dtype, device):
    """h, q, k, v, the output's grad and the gate's parameters, initialised as the model does."""
    g = torch.Generator(device=device).manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, generator=g, device=device, dtype=torch.float32)
    full = lambda shape, x: torch.full(shape, x, device=device, dtype=torch.float32)
    leaf = lambda x: x.to(dtype).requires_grad_(True)
    C = H * d
    h = leaf(rnd(B, T, C))
    q, k, v = (leaf(rnd(B, H, T, d)) for _ in range(3))
    grad = rnd(B, T, C).to(dtype)
    p = {}
    if kind == "output":
        p["weight"], p["bias"] = leaf(0.02 * rnd(C, C)), leaf(full((C,), 0.0))
    elif kind in ("score", "forget"):
        p["weight"], p["bias"] = leaf(0.02 * rnd(H, C)), leaf(full((H,), 3.0 if kind == "forget" else 0.0))
    elif kind == "pair":
        p["wq"], p["wk"] = leaf(0.02 * rnd(H, d)), leaf(0.02 * rnd(H, d))
        p["bias"], p["alpha"] = leaf(full((H,), 0.0)), leaf(full((1,), 0.0))
    return h, q, k, v, grad, p


class Clock:
    """CUDA events on the GPU (kernel time on the device's queue), perf_counter on the CPU."""

    def __init__(self, device):
        self.cuda = device == "cuda"

    def mark(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def ms(self, a, b):
        if self.cuda:
            b.synchronize()
            return a.elapsed_time(b)
        return (b - a) * 1e3


def time_case(fn, leaves, grad, a, device):
    """Median forward and backward ms; a first iteration over --max-iter-s ends the case there."""
    clock, fwd, bwd, note = Clock(device), [], [], ""
    for it in range(a.warmup + a.iters):
        for x in leaves:
            x.grad = None
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = clock.mark()
        out = fn()
        t1 = clock.mark()
        out.backward(grad)
        t2 = clock.mark()
        f, b = clock.ms(t0, t1), clock.ms(t1, t2)
        del out
        if it == 0 and (f + b) / 1e3 > a.max_iter_s:
            return f, b, f"slow: 1 iteration of {(f + b) / 1e3:.1f} s"
        if it >= a.warmup:
            fwd.append(f)
            bwd.append(b)
    fwd.sort(), bwd.sort()
    return fwd[len(fwd) // 2], bwd[len(bwd) // 2], note


def is_oom(e):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(e, oom_type)) or "out of memory" in str(e)


def torch_case(a, kind, B, T, H, d):
    device = a.device
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    r = {"status": "ok"}
    try:
        h, q, k, v, grad, p = make_inputs(kind, B, T, H, d, dtype, device)
        leaves = [h, q, k, v] + list(p.values())
        if kind in ("none", "output"):
            if kind == "output":
                gate = lambda y: merge_heads(y) * torch.sigmoid(F.linear(h, p["weight"], p["bias"]))
            else:
                gate = merge_heads
            if not hasattr(F, "scaled_dot_product_attention"):
                r["path"] = "math formula (no SDPA in torch " + torch.__version__.split("+")[0] + ")"
                fwd, bwd, note = time_case(lambda: gate(manual_sdpa(q, k, v)), leaves, grad, a, device)
            else:
                sdpa = lambda: gate(F.scaled_dot_product_attention(q, k, v, is_causal=True))
                try:
                    with sdpa_context("flash"):
                        r["path"] = "sdpa flash" if device == "cuda" else "sdpa flash (cpu)"
                        fwd, bwd, note = time_case(sdpa, leaves, grad, a, device)
                except RuntimeError as e:
                    if is_oom(e):
                        raise
                    # No flash kernel for this device, dtype or head size: the math backend, said so.
                    with sdpa_context("math"):
                        r["path"] = "sdpa math (flash unavailable)"
                        fwd, bwd, note = time_case(sdpa, leaves, grad, a, device)
        else:
            hidden = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
            r["path"] = "eager"
            fwd, bwd, note = time_case(lambda: eager(kind, h, q, k, v, p, hidden), leaves, grad, a, device)
            if device == "cpu" and kind in ("score", "forget") and hasattr(F, "scaled_dot_product_attention"):
                # The gate as SDPA's additive float mask; PyTorch's best expression is the faster one.
                masked = lambda: merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=gate_mask(kind, h, p, hidden)))
                try:
                    mf, mb, mnote = time_case(masked, leaves, grad, a, device)
                    if mf + mb < fwd + bwd:
                        fwd, bwd, note, r["path"] = mf, mb, mnote, "sdpa + float mask (faster than eager)"
                    else:
                        r["path"] = "eager (faster than sdpa + float mask)"
                except RuntimeError as e:
                    if is_oom(e):
                        raise
                    r["path"] = "eager (sdpa + float mask failed: " + str(e).splitlines()[0][:60] + ")"
        f = fwd_flops(B, T, H, d)
        r.update(fwd_ms=fwd, bwd_ms=bwd, fwd_tflops=f / (fwd * 1e-3) / 1e12,
                 fwd_bwd_tflops=3.5 * f / ((fwd + bwd) * 1e-3) / 1e12)
        if note:
            r["status"] = note
    except RuntimeError as e:
        if not is_oom(e):
            r["status"] = "error: " + str(e).splitlines()[0][:120]
        else:
            r["status"] = "oom"
    finally:
        h = q = k = v = grad = p = leaves = None  # free before the next case and before empty_cache
    if device == "cuda":
        r["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
        torch.cuda.empty_cache()
    r.setdefault("path", "eager" if kind not in ("none", "output") else "sdpa")
    return r


def run_torch(a):
    # One-off costs (the CUDA context, cuBLAS handles, kernels loaded on first use: 3 s on an H200)
    # fell on whichever case ran first and stopped it as "slow": a small untimed case of every kind
    # and head shape pays them before the timed cases.
    warm = argparse.Namespace(**{**vars(a), "warmup": 0, "iters": 1})
    for (H, d) in a.hd_list:
        for kind in a.kind_list:
            torch_case(warm, kind, 1, 128, H, d)
    results, start = {}, time.monotonic()
    for c in cases(a):
        if time.monotonic() - start > a.torch_budget:
            results[c] = {"status": "skipped: time budget", "path": "-"}
            continue
        results[c] = torch_case(a, *c)
        r = results[c]
        print(f"torch {c[0]:6s} B={c[1]} T={c[2]} {c[3]}x{c[4]}: {r['status']}"
              + (f", {r['fwd_bwd_tflops']:.3g} TFLOP/s fwd+bwd" if "fwd_bwd_tflops" in r else ""), flush=True)
    return results


# ---------------------------------------------------------------- report

def fmt_tf(r):
    return f"{r['fwd_bwd_tflops']:.3g}" if "fwd_bwd_tflops" in r else r.get("status", "?")


def fmt_mem(r):
    m = r.get("peak_mem_bytes")
    return f"{m / 2**30:.2f}" if isinstance(m, (int, float)) and m > 0 else "-"


def ratio(g, t):
    if "fwd_bwd_tflops" not in g:
        return None
    if "fwd_bwd_tflops" not in t:
        return math.inf if t.get("status") == "oom" else None
    return g["fwd_bwd_tflops"] / t["fwd_bwd_tflops"]


def fmt_ratio(x, t):
    if x is None:
        return "-"
    return f"∞ (torch {t['status']})" if math.isinf(x) else f"{x:.2f}×"


def verdicts(a, g, t):
    out = []
    flash_cases = [c for c in cases(a) if c[0] in ("none", "output")]
    if flash_cases:
        rs = [(ratio(g[c], t[c]), c) for c in flash_cases]
        got = [(x, c) for x, c in rs if x is not None]
        if len(got) < len(rs):
            out.append(f"- none/output ≥ 0.8× PyTorch flash SDPA (fwd+bwd): INCOMPLETE ({len(rs) - len(got)} case(s) without both numbers)")
        if got:
            worst, wc = min(got)
            ok = all(x >= 0.8 for x, _ in got)
            paths = sorted({t[c]["path"] for _, c in got})
            # Against anything but flash SDPA the line is informative only: the goal names flash.
            caveat = "" if paths == ["sdpa flash"] else "; NOT the goal's comparison, which is flash SDPA on the GPU"
            out.append(f"- none/output ≥ 0.8× PyTorch flash SDPA (fwd+bwd): {'PASS' if ok else 'FAIL'} "
                       f"(worst {worst:.2f}× at {wc[0]} T={wc[2]} {wc[3]}x{wc[4]}; torch path: {', '.join(paths)}{caveat})")
    gated = [c for c in cases(a) if c[0] in ("score", "forget", "pair")]
    at4k = [c for c in gated if c[2] == 4096]
    if not at4k:
        out.append("- score/forget/pair ≥ 3× PyTorch eager at T = 4k: not measured (T = 4096 not in --T)")
    else:
        rs = [(ratio(g[c], t[c]), c) for c in at4k]
        got = [(x, c) for x, c in rs if x is not None]
        if got:
            worst, wc = min(got)
            ok = all(x >= 3.0 for x, _ in got) and len(got) == len(rs)
            out.append(f"- score/forget/pair ≥ 3× PyTorch eager at T = 4k: {'PASS' if ok else 'FAIL'} "
                       f"(worst {'∞' if math.isinf(worst) else f'{worst:.2f}×'} at {wc[0]} {wc[3]}x{wc[4]}"
                       f"{'' if len(got) == len(rs) else f'; {len(rs) - len(got)} case(s) without numbers'})")
        else:
            out.append("- score/forget/pair ≥ 3× PyTorch eager at T = 4k: INCOMPLETE (no case with both numbers)")
    at16k = [c for c in gated if c[2] == 16384]
    if not at16k:
        out.append("- score/forget/pair run at T = 16k: not measured (T = 16384 not in --T)")
    else:
        failed = [f"{c[0]} {c[3]}x{c[4]}: {g[c].get('status', '?')}" for c in at16k if g[c].get("status") != "ok"]
        torch_states = sorted({t[c].get("status", "?").split(":")[0] for c in at16k})
        out.append(f"- score/forget/pair run at T = 16k: {'PASS' if not failed else 'FAIL (' + '; '.join(failed) + ')'}"
                   f"; PyTorch eager there: {', '.join(torch_states)}")
    return out


def cpu_verdicts(a, g, t):
    """The CPU goals (docs/benchmarks.md, 2026-12-05): at T ≥ 1024, none/output ≥ 1.5× SDPA and
    score/forget/pair ≥ 3× PyTorch's best expression."""
    out = []
    for kinds, goal, name in ((("none", "output"), 1.5, "PyTorch SDPA"),
                              (("score", "forget", "pair"), 3.0, "PyTorch's best expression")):
        cs = [c for c in cases(a) if c[0] in kinds and c[2] >= 1024]
        if not cs:
            out.append(f"- {'/'.join(kinds)} ≥ {goal}× {name} at T ≥ 1024: not measured (no T ≥ 1024)")
            continue
        rs = [(ratio(g[c], t[c]), c) for c in cs]
        got = [(x, c) for x, c in rs if x is not None]
        if not got:
            out.append(f"- {'/'.join(kinds)} ≥ {goal}× {name} at T ≥ 1024: INCOMPLETE")
            continue
        worst, wc = min(got)
        ok = all(x >= goal for x, _ in got) and len(got) == len(rs)
        out.append(f"- {'/'.join(kinds)} ≥ {goal}× {name} at T ≥ 1024: {'PASS' if ok else 'FAIL'} (worst "
                   f"{'∞' if math.isinf(worst) else f'{worst:.2f}×'} at {wc[0]} T={wc[2]} {wc[3]}x{wc[4]}"
                   f"{'' if len(got) == len(rs) else f'; {len(rs) - len(got)} case(s) without numbers'})")
    return out


def torch_configuration():
    """PyTorch's version and CPU parallel backend, as torch.__config__ reports them."""
    info = [l.strip() for l in torch.__config__.parallel_info().splitlines()
            if l.startswith(("ATen parallel backend", "Intel(R)", "OpenMP"))]
    return f"PyTorch {torch.__version__} ({'; '.join(info)})"


def report(a, g, t, threads=None):
    dev = torch.cuda.get_device_name() if a.device == "cuda" else f"CPU, {os.cpu_count()} cores"
    if threads:
        dev += f", {threads} thread{'s' if threads > 1 else ''} (gattn OMP_NUM_THREADS, torch.set_num_threads)"
    precisions = sorted({r.get("precision", a.dtype) for r in g.values() if "precision" in r}) or [a.dtype]
    lines = [f"gattn vs {torch_configuration() if a.device == 'cpu' else 'PyTorch ' + torch.__version__} attention on {dev}, {a.dtype} (gattn precision: {', '.join(precisions)}); "
             f"median of {a.iters} iterations after {a.warmup} warm-up; TFLOP/s of forward+backward with "
             "4·B·H·T²·d/2 forward and 2.5× that backward", "",
             "| kind | T | H×d | B | gattn TFLOP/s | torch TFLOP/s | ratio | gattn fwd TFLOP/s | torch fwd TFLOP/s "
             "| gattn peak GiB | torch peak GiB | torch path |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases(a):
        gr, tr = g[c], t[c]
        fwd = lambda r: f"{r['fwd_tflops']:.3g}" if "fwd_tflops" in r else "-"
        lines.append(f"| {c[0]} | {c[2]} | {c[3]}×{c[4]} | {c[1]} | {fmt_tf(gr)} | {fmt_tf(tr)} | "
                     f"{fmt_ratio(ratio(gr, tr), tr)} | {fwd(gr)} | {fwd(tr)} | {fmt_mem(gr)} | {fmt_mem(tr)} | "
                     f"{tr.get('path', '-')}{'' if tr.get('status') == 'ok' else ' (' + tr.get('status', '?') + ')'} |")
    if a.device == "cpu":
        lines += ["", "Goals on the CPU (docs/benchmarks.md):"] + cpu_verdicts(a, g, t)
    else:
        lines += ["", "Goals (docs/benchmarks.md; stated for an H200 in bf16):"] + verdicts(a, g, t)
    return "\n".join(lines) + "\n"


def main():
    a = parse_args()
    sections = []
    for threads in a.thread_list:
        if threads:
            torch.set_num_threads(threads)
        g = run_gattn(a, threads)
        t = run_torch(a)
        sections.append(report(a, g, t, threads))
        print(sections[-1], flush=True)
    text = "\n".join(sections)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
