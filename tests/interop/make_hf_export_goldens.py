#!/usr/bin/env python3
"""Writes the tiny gattn checkpoints and the transformers goldens that gattn's export parity test reads
(tests/unit/test_hf_export_parity.cpp), so CI needs no Python.

For each golden model of tests/tools/export_models.h (one per transformers class gattn exports, and
the headwise gate) it writes the gattn checkpoint tests/data/hf_export/<name>/model.safetensors with
gattn_make_export_checkpoints (random weights from a fixed seed), exports it with `gattn export`,
loads the export with AutoModelForCausalLM.from_pretrained (no remote code; no weight may be missing,
unexpected or misshapen, and every key of config.json must read back as written), and writes
tests/data/hf_export/<name>.goldens.safetensors:

  ids          I32 [B, T]     the token ids
  logits_f32   F32 [B, T, V]  transformers' logits, the export loaded in float32 (eager attention)
  logits_f64   F64 [B, T, V]  the same loaded in float64, transformers' float32 casts kept in float64
                              (make_hf_goldens.float64_exactly: the same formulas without the casts)

and in its metadata what the export was: model_class, config_json (config.json's text) and
tensor_crc32 (each tensor of model.safetensors, zlib's CRC-32 of its bytes), with the transformers
and torch versions. The test exports the same checkpoint with the C++ code and checks all of it.

Run it through tests/interop/make_hf_export_goldens.sh; it rewrites the files in place, byte for
byte the same for the same build and library versions.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import torch
import transformers
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_hf_goldens import float64_exactly, save_sorted  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "hf_export")
B, T = 2, 12


def check_config(directory, cls_name):
    """Every key gattn wrote reads back through transformers' config class as written."""
    written = json.load(open(os.path.join(directory, "config.json")))
    config = transformers.AutoConfig.from_pretrained(directory)
    read = config.to_dict()
    for key, value in written.items():
        if key in ("torch_dtype", "dtype"):  # transformers 5 keeps dtype only
            continue
        assert read.get(key) == value, f"{cls_name}: config.json {key} = {value!r} reads back as {read.get(key)!r}"
    return config


def load(directory, cls_name, dtype):
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        directory, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    assert type(model).__name__ == cls_name, f"loaded {type(model).__name__}, not {cls_name}"
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info.get(kind), f"{cls_name}: {kind} {info[kind]}"
    return model.eval()


def build(name, cls_name, gattn, checkpoints, work, seed):
    checkpoint = os.path.join(OUT, name)
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.copytree(os.path.join(checkpoints, name), checkpoint)
    directory = os.path.join(work, "hf", name)
    subprocess.run([gattn, "export", "--hf", checkpoint, "--out", directory, "--class", cls_name], check=True,
                   stdout=subprocess.DEVNULL)
    config = check_config(directory, cls_name)
    crcs = {}
    with safe_open(os.path.join(directory, "model.safetensors"), framework="pt") as f:
        for key in f.keys():
            crcs[key] = f"{zlib.crc32(f.get_tensor(key).numpy().tobytes()):08x}"
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, config.vocab_size, (B, T), generator=gen)
    with torch.no_grad():
        logits32 = load(directory, cls_name, torch.float32)(input_ids=ids).logits.to(torch.float32).contiguous()
        m64 = load(directory, cls_name, torch.float64)
        with float64_exactly(m64):
            logits64 = m64(input_ids=ids).logits.contiguous()
    assert logits64.dtype == torch.float64
    drift = (logits64 - logits32.double()).abs().max().item()
    assert drift < 1e-4, f"{name}: f32 and f64 transformers logits differ by {drift}"
    meta = {
        "model_class": cls_name,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "config_json": open(os.path.join(directory, "config.json")).read(),
        "tensor_crc32": json.dumps(crcs, sort_keys=True, separators=(",", ":")),
    }
    golden = os.path.join(OUT, f"{name}.goldens.safetensors")
    save_sorted({"ids": ids.to(torch.int32), "logits_f32": logits32, "logits_f64": logits64}, golden, meta)
    size = os.path.getsize(os.path.join(checkpoint, "model.safetensors")) + os.path.getsize(golden)
    print(f"{name}: {cls_name}, |f32 − f64| ≤ {drift:.2e}, {size / 1024:.0f} KiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="models to write (default: every golden model)")
    parser.add_argument("--gattn", required=True, help="the gattn binary")
    parser.add_argument("--make-checkpoints", required=True, help="the gattn_make_export_checkpoints binary")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        checkpoints = os.path.join(work, "checkpoints")
        listed = subprocess.run([args.make_checkpoints, checkpoints], check=True, capture_output=True, text=True)
        models = dict(line.split() for line in listed.stdout.splitlines())
        for name in args.names or models:
            if name not in models:
                sys.exit(f"make_hf_export_goldens: unknown model '{name}' (known: {', '.join(models)})")
            build(name, models[name], args.gattn, checkpoints, work, args.seed)


if __name__ == "__main__":
    main()
