// HfRegex over PCRE2's 8-bit library.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "framework/text/hf_regex.h"

#include <pcre2.h>

#include <new>

#include "core/tensor/error.h"

namespace gattn {

struct HfRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// Bytes in the UTF-8 character that starts with `lead`.
std::size_t char_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!data) throw std::bad_alloc();
  }
  ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

HfRegex::HfRegex(const std::string& pattern, const std::string& where) : code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (!code_->code)
    throw ValueError(where + ": the regex " + pattern + " does not compile (PCRE2: " + pcre2_message(error) +
                     " at offset " + std::to_string(offset) + ")");
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // without JIT (an unsupported CPU) it interprets
}

HfRegex::~HfRegex() = default;

void HfRegex::find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const {
  matches.clear();
  MatchData md(code_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (std::size_t at = 0; at <= text.size();) {
    int rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, md.data, nullptr);
    // The JIT's stack is small; a pathological input (a megabyte of one backtracking run) goes to the
    // interpreter, whose limits are PCRE2's defaults.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw ValueError("the tokenizer's regex failed on the text (PCRE2: " + pcre2_message(rc) + ")");
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    matches.emplace_back(ovector[0], ovector[1]);
    if (ovector[1] > ovector[0]) {
      at = ovector[1];
    } else {
      if (ovector[0] >= text.size()) break;
      at = ovector[0] + char_length(static_cast<unsigned char>(text[ovector[0]]));
    }
  }
}

}  // namespace gattn
