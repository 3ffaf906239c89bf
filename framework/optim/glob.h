// Glob patterns over dotted parameter names for optimizer parameter groups (docs/config.md).
#pragma once
#include <string>

namespace gattn::optim {

// True when `name` matches `pattern` as a whole. `*` matches any run of characters, dots included
// (so `*.bias` reaches `blocks.0.attn.qkv.bias`), `?` matches exactly one character, and every
// other character matches only itself. Runs in O(|pattern|·|name|) time at worst, never
// exponential, and allocates nothing.
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace gattn::optim
