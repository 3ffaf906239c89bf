// Splitting comma-separated option values.
#include "recipes/common/option_list.h"

#include <sstream>

#include "recipes/ablate/ablation.h"  // UsageError

namespace gattn::recipes {

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw UsageError(option + ": empty item in '" + text + "'");
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(option + ": expected a comma-separated list, got '" + text + "'");
  return out;
}

}  // namespace gattn::recipes
