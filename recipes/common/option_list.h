// Comma-separated option values (`--kinds none,pair`, `--kv-budget 25%,50%`), shared by the
// commands that take a grid of cases.
#pragma once
#include <string>
#include <vector>

namespace gattn::recipes {

// The items of `text` split at commas. Throws UsageError naming `option` for an empty item
// ("a,,b") or an empty list.
std::vector<std::string> split_list(const std::string& text, const std::string& option);

}  // namespace gattn::recipes
