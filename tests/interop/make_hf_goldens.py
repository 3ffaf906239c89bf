#!/usr/bin/env python3
"""Writes the tiny Hugging Face models and the transformers goldens that gattn's import parity tests
read (tests/unit/test_hf_parity.cpp, tests/integration/cli_import.sh), so CI needs no Python.

For each model class gattn imports (docs/import.md) it builds a tiny model with seeded random
weights (norm weights and biases random too, so a norm or bias mistake cannot hide behind ones and
zeros), saves it as a Hugging Face directory (config.json + safetensors) under tests/data/hf/<name>/
and writes tests/data/hf/<name>.goldens.safetensors:

  ids          I32 [B, T]     the token ids
  logits_f32   F32 [B, T, V]  transformers' logits, the model loaded in float32 (eager attention)
  loss_f32     F32 [1]        transformers' mean loss (labels = ids, so token t predicts t + 1)
  logits_f64   F64 [B, T, V]  the same model loaded in float64
  loss_f64     F64 [1]        mean cross-entropy of logits_f64[:, :-1] against ids[:, 1:], in float64

The weights are stored in bf16, f16 or f32 (the reader must take all three); bf16 and f16 values are
exact in float64, so the f64 goldens are the model's math to ~1e-15. transformers computes a few
things in float32 whatever the model's dtype (RMSNorm, the softmax of eager attention, the rotary
frequencies, the loss); for the f64 goldens those are patched to stay in float64 (the same
formulas, only without the casts: see `float64_exactly`), which changes precision, not the math.

Run it through tests/interop/make_hf_goldens.sh (a venv with torch, transformers, safetensors), from
anywhere; it rewrites the files in place, byte for byte the same for the same library versions.
"""
import argparse
import contextlib
import json
import os
import shutil
import struct
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "hf")
B, T = 2, 16

COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64)

# name -> (class, config keys, storage dtype, shards). One entry per class gattn imports; together
# they read bf16, f16 and f32, GQA, biases on q/k/v only, QK-norm, a head width that is not
# hidden/heads, partial rotary, zero-centred norms, the output gate, tied and untied heads, and a
# sharded checkpoint.
MODELS = {
    "gpt2": (
        "GPT2LMHeadModel",
        dict(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5, bos_token_id=0,
             eos_token_id=0),
        torch.float32,
        1,
    ),
    "llama": (
        "LlamaForCausalLM",
        dict(COMMON, vocab_size=160, intermediate_size=160, num_key_value_heads=2, rms_norm_eps=1e-5,
             rope_theta=500000.0, tie_word_embeddings=False),
        torch.bfloat16,
        1,
    ),
    "qwen2": (
        "Qwen2ForCausalLM",
        dict(COMMON, vocab_size=128, intermediate_size=128, num_key_value_heads=1, rms_norm_eps=1e-6,
             rope_theta=1000000.0, tie_word_embeddings=True),
        torch.float16,
        2,
    ),
    "qwen3": (
        "Qwen3ForCausalLM",
        dict(COMMON, vocab_size=128, intermediate_size=96, num_key_value_heads=2, head_dim=24, rms_norm_eps=1e-6,
             rope_theta=1000000.0, tie_word_embeddings=False),
        torch.bfloat16,
        1,
    ),
    "qwen3_next": (
        "Qwen3NextForCausalLM",
        dict(COMMON, vocab_size=128, intermediate_size=96, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6,
             rope_theta=10000.0, partial_rotary_factor=0.25, layer_types=["full_attention"] * 2, num_experts=0,
             tie_word_embeddings=False),
        torch.bfloat16,
        1,
    ),
    "qwen3_5": (
        "Qwen3_5ForCausalLM",
        dict(COMMON, vocab_size=128, intermediate_size=96, num_key_value_heads=1, head_dim=16, rms_norm_eps=1e-6,
             rope_theta=10000.0, partial_rotary_factor=0.5, layer_types=["full_attention"] * 2,
             tie_word_embeddings=True),
        torch.float16,
        1,
    ),
}


def config_class(cls_name):
    """The config class of a model class (Qwen3_5ForCausalLM takes the text config)."""
    if cls_name == "Qwen3_5ForCausalLM":
        return transformers.Qwen3_5TextConfig
    return getattr(transformers, cls_name).config_class


def randomize(model, gen):
    """Every parameter random at a scale that keeps activations near 1 and attention non-uniform:
    norm weights around 1 (around 0 where the model applies 1 + w), biases small, matrices 1/√fan_in."""
    zero_centred = type(model).__name__.startswith(("Qwen3Next", "Qwen3_5"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if "norm" in name or "ln_" in name:
                base = 0.0 if (zero_centred or name.endswith(".bias")) else 1.0
                value = base + 0.2 * noise
            elif name.endswith(".bias"):
                value = 0.1 * noise
            elif "wte" in name or "embed_tokens" in name or "wpe" in name:
                value = 0.25 * noise
            else:
                # Conv1D (GPT-2) stores [in, out], Linear [out, in].
                fan_in = p.shape[0] if "transformer.h." in name else p.shape[1]
                value = noise / fan_in**0.5
            p.copy_(value.to(p.dtype))


def split_into_shards(directory, shards):
    """Rewrites model.safetensors as `shards` files and their index, as save_pretrained names them."""
    single = os.path.join(directory, "model.safetensors")
    tensors = load_file(single)
    names = sorted(tensors)
    per = (len(names) + shards - 1) // shards
    weight_map, total = {}, 0
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n].contiguous() for n in names[s * per:(s + 1) * per]}
        save_file(part, os.path.join(directory, file), metadata={"format": "pt"})
        for n, t in part.items():
            weight_map[n] = file
            total += t.numel() * t.element_size()
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
        f.write("\n")
    os.remove(single)


@contextlib.contextmanager
def float64_exactly(model):
    """transformers' float32 islands, kept in float64: the softmax of eager attention, RMSNorm and
    the rotary frequencies (the same formulas as the modules', without the casts)."""
    softmax = torch.nn.functional.softmax

    def softmax64(x, dim=None, _stacklevel=3, dtype=None):
        return softmax(x, dim=dim, dtype=torch.float64 if x.dtype == torch.float64 else dtype)

    def rms_forward(module, zero_centred):
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))

        def forward(x):
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
            return y * (1.0 + module.weight) if zero_centred else module.weight * y

        return forward

    def rotary_forward(module):
        config = module.config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        params = config.rope_parameters
        assert params["rope_type"] == "default"
        partial = params.get("partial_rotary_factor", 1.0) if type(module).__name__.startswith(("Qwen3Next", "Qwen3_5")) else 1.0
        dim = int(head_dim * partial)
        inv_freq = 1.0 / (params["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))

        def forward(x, position_ids):
            if position_ids.ndim == 3:  # Qwen3.5's (temporal, height, width) positions: all the text's
                assert torch.equal(position_ids[0], position_ids[1]) and torch.equal(position_ids[0], position_ids[2])
                position_ids = position_ids[0]
            freqs = position_ids[..., None].to(torch.float64) * inv_freq
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos(), emb.sin()

        return forward

    patched = []
    for m in model.modules():
        name = type(m).__name__
        if name.endswith("RMSNorm"):
            m.forward = rms_forward(m, name.startswith(("Qwen3Next", "Qwen3_5")))
            patched.append(m)
        elif name.endswith("RotaryEmbedding"):
            m.forward = rotary_forward(m)
            patched.append(m)
    torch.nn.functional.softmax = softmax64
    try:
        yield
    finally:
        torch.nn.functional.softmax = softmax
        for m in patched:
            del m.forward


def save_sorted(tensors, path, metadata):
    """safetensors with the header in sorted order: the library's writer orders the metadata by a
    hash, so its bytes would change from run to run."""
    names = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32"}
    header, blobs, offset = {"__metadata__": dict(sorted(metadata.items()))}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        blob = t.numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def goldens(directory, cls_name, ids):
    cls = getattr(transformers, cls_name)
    out = {"ids": ids.to(torch.int32)}
    m32 = cls.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        r = m32(input_ids=ids, labels=ids)
    out["logits_f32"] = r.logits.to(torch.float32).contiguous()
    out["loss_f32"] = r.loss.to(torch.float32).reshape(1)
    m64 = cls.from_pretrained(directory, dtype=torch.float64, attn_implementation="eager").eval()
    with torch.no_grad(), float64_exactly(m64):
        logits = m64(input_ids=ids).logits
    assert logits.dtype == torch.float64
    V = logits.shape[-1]
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    out["logits_f64"] = logits.contiguous()
    out["loss_f64"] = loss.reshape(1)
    # The two references differ by float32 rounding only.
    drift = (out["logits_f64"] - out["logits_f32"].double()).abs().max().item()
    assert drift < 1e-4, f"{cls_name}: f32 and f64 transformers logits differ by {drift}"
    return out, drift


def build(name, seed):
    cls_name, keys, dtype, shards = MODELS[name]
    torch.manual_seed(seed)
    config = config_class(cls_name)(**keys)
    model = getattr(transformers, cls_name)(config).to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen)
    model = model.to(dtype)
    directory = os.path.join(OUT, name)
    shutil.rmtree(directory, ignore_errors=True)
    model.save_pretrained(directory)
    for extra in ("generation_config.json",):  # not read by gattn: keep the committed files small
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(directory, extra))
    if shards > 1:
        split_into_shards(directory, shards)
    ids = torch.randint(0, config.vocab_size, (B, T), generator=gen)
    tensors, drift = goldens(directory, cls_name, ids)
    meta = {
        "model_class": cls_name,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "weights_dtype": str(dtype).removeprefix("torch."),
    }
    save_sorted(tensors, os.path.join(OUT, f"{name}.goldens.safetensors"), meta)
    size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(directory) for f in fs)
    size += os.path.getsize(os.path.join(OUT, f"{name}.goldens.safetensors"))
    print(f"{name}: {cls_name}, {meta['weights_dtype']}, loss f32 {tensors['loss_f32'].item():.6f} "
          f"f64 {tensors['loss_f64'].item():.12f}, |f32 − f64| ≤ {drift:.2e}, {size / 1024:.0f} KiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models to write (default: all of {', '.join(MODELS)})")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for name in args.names or MODELS:
        if name not in MODELS:
            sys.exit(f"make_hf_goldens: unknown model '{name}' (known: {', '.join(MODELS)})")
        build(name, args.seed)


if __name__ == "__main__":
    main()
