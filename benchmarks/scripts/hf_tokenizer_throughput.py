#!/usr/bin/env python3
"""`tokenizers`' encode throughput on one thread, as gattn_hf_tokenizer_throughput measures gattn's:
the text as one string and line by line, best of REPEAT runs after a warm-up. Prints the same lines.

  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false python3 hf_tokenizer_throughput.py DIR TEXT [REPEAT]
"""
import os
import sys
import time

from tokenizers import Tokenizer


def best(repeat, encode):
    tokens = encode()
    seconds = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        tokens = encode()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, tokens


def main():
    directory, path = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tok = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    size = len(text.encode("utf-8"))
    lines = text.splitlines(keepends=True)
    whole = best(repeat, lambda: len(tok.encode(text, add_special_tokens=False).ids))
    # Line by line at its best: encode() per line, as gattn's loop does, or encode_batch over all the
    # lines, which skips Python's per-call cost and stays on one thread under RAYON_NUM_THREADS=1.
    by_line = min(
        best(repeat, lambda: sum(len(tok.encode(line, add_special_tokens=False).ids) for line in lines)),
        best(repeat, lambda: sum(len(e.ids) for e in tok.encode_batch(lines, add_special_tokens=False))))
    for mode, (seconds, tokens) in (("whole", whole), ("lines", by_line)):
        print(f"{mode} {size / seconds / 1e6:.3f} MB/s {tokens / seconds:.0f} tokens/s {tokens} tokens {seconds:.4f} s")


if __name__ == "__main__":
    main()
