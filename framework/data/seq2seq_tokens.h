// The token ids every sequence-to-sequence dataset and encoder–decoder model share
// (docs/seq2seq.md): the three lowest ids are reserved, content starts at kSeq2SeqFirstContent. The
// SentencePiece tokenizers `gattn tokenize` trains put <unk>, <s>, </s> at 0, 1, 2, so their ids fit
// this layout as they are (<unk> never appears in byte-fallback output, so it can pad).
#pragma once
#include <cstdint>

namespace gattn {

inline constexpr std::int32_t kSeq2SeqPad = 0;    // fills a source past its end; the encoder masks it out
inline constexpr std::int32_t kSeq2SeqStart = 1;  // the decoder's first input
inline constexpr std::int32_t kSeq2SeqEnd = 2;    // the target's last token: generation stops at it
inline constexpr std::int32_t kSeq2SeqFirstContent = 3;

}  // namespace gattn
