// to_nfc over ICU's Normalizer2.
#include "framework/text/unicode_nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>

#include "core/tensor/error.h"

namespace gattn {

std::string to_nfc(std::string_view text) {
  // UTF-8 lead bytes below 0xCC encode code points below U+0300.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0xCC; }))
    return std::string(text);
  // ICU measures strings in int32: longer text is normalized in parts cut before a character that
  // starts a new composition (a code point below U+0300 never combines with what precedes it).
  constexpr std::size_t kPart = std::size_t{1} << 30;
  if (text.size() > kPart) {
    std::size_t cut = kPart;
    const auto starts_low = [&](std::size_t i) {
      const auto c = static_cast<unsigned char>(text[i]);
      return c < 0x80 || (c >= 0xC0 && c < 0xCC);
    };
    while (cut > 0 && !starts_low(cut)) --cut;
    if (cut == 0) throw ValueError("the text has no character below U+0300 in its first GiB: too long to normalize");
    return to_nfc(text.substr(0, cut)) + to_nfc(text.substr(cut));
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("ICU's NFC normalizer is unavailable: ") + u_errorName(status));
  const icu::StringPiece piece(text.data(), static_cast<std::int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<std::int32_t>(text.size()));
  nfc->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) throw Error(std::string("NFC normalization failed: ") + u_errorName(status));
  return out;
}

}  // namespace gattn
