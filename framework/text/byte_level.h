// GPT-2's byte-level alphabet: each of the 256 byte values as one printable character, so that a
// byte-level BPE vocabulary (GPT-2, Llama 3, Qwen) spells any byte string in text: the printable
// ASCII and Latin-1 bytes stand for themselves, the other 68 (controls, space, …) for U+0100–U+0143
// (a space is "Ġ", a newline "Ċ"). Hugging Face's ByteLevel pre-tokenizer and decoder use it.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace gattn {

// The character byte `b` stands for, as UTF-8.
const std::string& byte_level_char(unsigned char b);

// The bytes a byte-level token spells ("Ġthe" → " the"), or nullopt when a character of it is not
// one of the 256.
std::optional<std::string> byte_level_bytes(std::string_view token);

}  // namespace gattn
