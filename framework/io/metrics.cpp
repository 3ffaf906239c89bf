// metrics.jsonl writing and reading.
#include "framework/io/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "framework/base/input_file.h"
#include "framework/io/errors.h"

namespace gattn {

namespace {
// JSON has no NaN/Inf: nlohmann would write them as null anyway, but say so explicitly and
// recursively so arrays (per-layer values) are covered too.
nlohmann::json finite_or_null(const nlohmann::json& v) {
  if (v.is_number_float()) return std::isfinite(v.get<double>()) ? v : nlohmann::json(nullptr);
  if (v.is_array() || v.is_object()) {
    nlohmann::json out = v;
    for (auto& item : out) item = finite_or_null(item);
    return out;
  }
  return v;
}
}  // namespace

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw CheckpointError("cannot open " + path + " for appending metrics: " + std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  std::string line = finite_or_null(record).dump();
  line.push_back('\n');
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw CheckpointError("cannot write metrics to " + path_ + ": " + std::strerror(errno));
}

std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::istringstream in(read_input_file<CheckpointError>(path, "the metrics file"));
  std::vector<nlohmann::json> out;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw CheckpointError(path + ":" + std::to_string(n) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace gattn
