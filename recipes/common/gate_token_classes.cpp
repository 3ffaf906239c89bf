// Gate values by token class, from an inspected forward.
#include "recipes/common/gate_token_classes.h"

#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "framework/data/seq2seq_tokens.h"

namespace gattn::recipes {

namespace {

// The classes of row `b` of i32 ids [B, T]; positions the sequence does not have (padding, the -1
// of a target past its end) are nullopt.
std::vector<std::optional<TokenClass>> row_classes(const Tensor& ids, std::int64_t b, const TextCodec& codec,
                                                   bool seq2seq) {
  const std::int64_t T = ids.size(1);
  const std::vector<std::int32_t> row = row_ids_until(ids, b, [](std::int32_t) { return false; });
  std::vector<std::string> bytes;
  std::vector<std::int64_t> at;  // the position of each entry of `bytes`
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int32_t id = row[static_cast<std::size_t>(t)];
    if (id < 0 || (seq2seq && id == kSeq2SeqPad) || id >= codec.size()) continue;
    bytes.push_back(seq2seq && (id == kSeq2SeqStart || id == kSeq2SeqEnd) ? std::string() : codec.token_bytes(id));
    at.push_back(t);
  }
  const std::vector<TokenClass> classes = classify_tokens(bytes);
  std::vector<std::optional<TokenClass>> out(static_cast<std::size_t>(T));
  for (std::size_t k = 0; k < at.size(); ++k) out[static_cast<std::size_t>(at[k])] = classes[k];
  return out;
}

// Adds the rows of one site's layers under one view: `ids` [B, T] names the token each position
// counts for.
void add_site(const std::vector<models::LayerInspection>& layers, const std::string& site, const std::string& view,
              const Tensor& ids, const TextCodec& codec, bool seq2seq, std::vector<GateTokenClassRow>& out) {
  if (!ids.defined() || layers.empty()) return;
  const std::int64_t B = ids.size(0), T = ids.size(1);
  std::vector<std::vector<std::optional<TokenClass>>> classes;  // computed on first use
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::vector<double>& g = layers[l].gate_by_position;
    if (g.size() != static_cast<std::size_t>(B * T)) continue;  // no gate per query position here
    if (classes.empty())
      for (std::int64_t b = 0; b < B; ++b) classes.push_back(row_classes(ids, b, codec, seq2seq));
    GateTokenClassRow row{site, static_cast<std::int64_t>(l), view, {}};
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        if (const auto& c = classes[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)])
          row.means.add(*c, g[static_cast<std::size_t>(b * T + t)]);
    if (!row.means.empty()) out.push_back(std::move(row));
  }
}

}  // namespace

std::vector<GateTokenClassRow> gate_token_classes(const models::ForwardResult& result, const Batch& batch,
                                                  const TextCodec* codec, bool seq2seq) {
  std::vector<GateTokenClassRow> out;
  if (!codec) return out;
  const std::string decoder = "self";
  for (const char* view : {"read", "next"}) {
    const Tensor& ids = std::string(view) == "read" ? batch.x : batch.y;
    add_site(result.inspection, decoder, view, ids, *codec, seq2seq, out);
    add_site(result.cross_inspection, "cross", view, ids, *codec, seq2seq, out);
  }
  add_site(result.encoder_inspection, "encoder", "read", batch.source, *codec, seq2seq, out);
  return out;
}

std::string format_gate_token_classes(const std::vector<GateTokenClassRow>& rows) {
  std::ostringstream s;
  s << "  site     layer  view";
  for (int c = 0; c < kTokenClasses; ++c) s << "  " << std::setw(18) << token_class_name(static_cast<TokenClass>(c));
  s << "\n";
  for (const GateTokenClassRow& r : rows) {
    s << "  " << std::left << std::setw(7) << r.site << "  " << std::right << std::setw(5) << r.layer << "  "
      << std::left << std::setw(4) << r.view << std::right;
    for (int c = 0; c < kTokenClasses; ++c) {
      const auto k = static_cast<TokenClass>(c);
      std::ostringstream cell;
      const double m = r.means.mean(k);
      if (std::isnan(m))
        cell << "-";
      else
        cell << std::fixed << std::setprecision(4) << m;
      cell << " (" << r.means.count[static_cast<std::size_t>(c)] << ")";
      s << "  " << std::setw(18) << cell.str();
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace gattn::recipes
