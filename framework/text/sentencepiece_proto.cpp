// The ModelProto rewrite over protobuf's wire format: field numbers from SentencePiece's
// sentencepiece_model.proto (ModelProto: 1 pieces, 2 trainer_spec, 3 normalizer_spec,
// 4 self_test_data, 5 denormalizer_spec; NormalizerSpec: 1 name, 3 add_dummy_prefix,
// 4 remove_extra_whitespaces, 5 escape_whitespaces).
#include "framework/text/sentencepiece_proto.h"

#include <cstdint>
#include <utility>

#include "framework/base/errors.h"

namespace gattn {

namespace {

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

bool get_varint(const std::string& in, std::size_t& at, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && at < in.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(in[at++]);
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::string sentencepiece_with_plain_normalizer(const std::string& model, const std::string& where) {
  std::string out;
  out.reserve(model.size());
  for (std::size_t at = 0; at < model.size();) {
    const std::size_t start = at;
    std::uint64_t key = 0, length = 0;
    if (!get_varint(model, at, key)) throw DataError(where + " is not a SentencePiece model (a truncated field)");
    const std::uint64_t field = key >> 3, wire = key & 7;
    switch (wire) {
      case 0:
        if (!get_varint(model, at, length)) throw DataError(where + " is not a SentencePiece model (a bad varint)");
        break;
      case 1:
        at += 8;
        break;
      case 2:
        if (!get_varint(model, at, length) || length > model.size() - at)
          throw DataError(where + " is not a SentencePiece model (a field runs past the end)");
        at += length;
        break;
      case 5:
        at += 4;
        break;
      default:
        throw DataError(where + " is not a SentencePiece model (wire type " + std::to_string(wire) + ")");
    }
    if (at > model.size()) throw DataError(where + " is not a SentencePiece model (a field runs past the end)");
    if (field == 3 || field == 4 || field == 5) continue;  // replaced below, or dropped
    out.append(model, start, at - start);
  }
  std::string spec;
  spec += static_cast<char>((1 << 3) | 2);  // name
  put_varint(spec, 8);
  spec += "identity";
  for (const auto& [number, value] : {std::pair{3, 0}, std::pair{4, 0}, std::pair{5, 1}}) {
    put_varint(spec, static_cast<std::uint64_t>(number) << 3);
    put_varint(spec, static_cast<std::uint64_t>(value));
  }
  put_varint(out, (3 << 3) | 2);
  put_varint(out, spec.size());
  out += spec;
  return out;
}

}  // namespace gattn
