#!/usr/bin/env bash
# Text pairs for configs/seq2seq/shakespeare_pairs.yaml: each line of data/tinyshakespeare.txt with 3
# to 8 words and at most 40 characters, a tab, then its words in reverse order
# ("To be or not\tnot or be To"), one pair per line in data/shakespeare_pairs.tsv (the format of
# data.kind pairs, docs/seq2seq.md). The reversal moves whole words, so the decoder must find each
# word in the source by attention: the cross-attention maps show the word blocks in reverse. Spaces
# are collapsed to one; the order of the lines is kept, so the last tenth (the val split) is the end
# of the corpus. Deterministic, well under a second; an existing file is kept (--force remakes it).
#
#   ./scripts/shakespeare_pairs.sh && ./build/gattn train --config configs/seq2seq/shakespeare_pairs.yaml
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out=data/shakespeare_pairs.tsv
if [[ -f $out && ${1:-} != --force ]]; then
  echo "shakespeare_pairs: $out exists (--force remakes it)"
  exit 0
fi
tmp="$out.partial-$$"
trap 'rm -f "$tmp"' EXIT
LC_ALL=C awk '
  {
    sub(/\r$/, "")
    n = split($0, w, /[ \t]+/)
    k = 0
    for (i = 1; i <= n; ++i) if (w[i] != "") v[++k] = w[i]
    if (k < 3 || k > 8) next
    src = v[1]
    for (i = 2; i <= k; ++i) src = src " " v[i]
    if (length(src) > 40) next
    tgt = v[k]
    for (i = k - 1; i >= 1; --i) tgt = tgt " " v[i]
    print src "\t" tgt
  }' data/tinyshakespeare.txt > "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "shakespeare_pairs: $(wc -l < "$out") pairs in $out"
