// Unicode normalization form C, the normalizer of Qwen's tokenizer.json ("NFC"), through ICU
// (Debian's libicu-dev), which carries the Unicode composition tables.
#pragma once
#include <string>
#include <string_view>

namespace gattn {

// `text` (valid UTF-8) in NFC. Text of code points below U+0300 is NFC already and is returned as it is
// without asking ICU: no character there decomposes or combines with the one before it.
std::string to_nfc(std::string_view text);

}  // namespace gattn
