// The gate's mean by token class (punctuation, function word, content word, other:
// framework/text/token_class.h) per attention layer, over every sequence of an inspected batch:
// what `gattn inspect` and `gattn report` print to test [GateAttn-Guide] §3.2's reading that the
// decoder's context gate is lower on punctuation and function words than on content words.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/text/text_codec.h"
#include "framework/text/token_class.h"
#include "models/gpt.h"

namespace gattn::recipes {

// One layer's gate values split by class, under one reading of a position:
//   read — the token at the position (the one its gates read: x_t, or the source token in the encoder);
//   next — the token the position predicts (y_t: the next token, or the target token this decoding
//          step writes, the reading of §3.2's "在生成标点符号、停用词这些功能性token时").
struct GateTokenClassRow {
  std::string site;  // "self" (a decoder's self-attention), "cross" or "encoder"
  std::int64_t layer = 0;
  std::string view;  // "read" or "next"
  TokenClassMeans means;
};

// The rows of every layer whose gates report a value per query position (LayerInspection::
// gate_by_position) in `result`, a forward of `batch` with ForwardOptions::inspect. Padding positions
// (an encoder–decoder batch's) are left out; its start and end tokens count as other. Empty without a
// codec (token ids without text have no classes) or without such gates.
std::vector<GateTokenClassRow> gate_token_classes(const models::ForwardResult& result, const Batch& batch,
                                                  const TextCodec* codec, bool seq2seq);

// The rows as the aligned table gattn inspect prints (a header line, then a line per row:
// site, layer, view, then for each class its mean and, in parentheses, the positions it counted).
std::string format_gate_token_classes(const std::vector<GateTokenClassRow>& rows);

}  // namespace gattn::recipes
