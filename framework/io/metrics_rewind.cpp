// metrics.jsonl rewinding.
#include "framework/io/metrics_rewind.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "framework/base/input_file.h"
#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"

namespace gattn {

std::int64_t rewind_metrics(const std::string& path, std::int64_t step) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  std::istringstream in(read_input_file<CheckpointError>(path, "the metrics file"));
  std::string kept, line;
  std::int64_t dropped = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const bool keep = !j.is_discarded() && j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                      j["step"].get<std::int64_t>() <= step;
    if (keep) {
      kept += line;
      kept += '\n';
    } else {
      ++dropped;
    }
  }
  // Untouched when nothing goes: no needless rewrite of a long log.
  if (dropped > 0) write_file_atomically(path, kept);
  return dropped;
}

}  // namespace gattn
