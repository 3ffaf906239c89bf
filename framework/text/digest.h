// The two encodings a tokenizer needs to travel inside a checkpoint's string metadata and be
// recognised later: its SHA-256 (the same hex `sha256sum tokenizer.model` prints) and base64.
// Both come from OpenSSL's libcrypto.
#pragma once
#include <optional>
#include <string>

namespace gattn {

std::string sha256_hex(const std::string& bytes);  // 64 lowercase hex digits
std::string base64_encode(const std::string& bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace gattn
