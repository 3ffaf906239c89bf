// CRC-32 by slicing-by-8 (eight table lookups per 8 bytes, ~1-2 GB/s: a checkpoint's checksums cost
// a small fraction of writing it) and the metadata that carries one CRC per tensor.
#include "framework/io/checksums.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

namespace gattn {

namespace {

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t i = 0; i < 256; ++i)
    for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  return t;
}

constexpr Tables kTables = make_tables();

std::string where(const SafetensorsFile& file) { return "checkpoint file '" + file.path + "'"; }

}  // namespace

std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (size >= 8) {
    std::uint32_t lo, hi;  // little-endian host (safetensors.cpp asserts it)
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
        kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^ kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) c = kTables[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

std::string crc32_hex(std::uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

namespace {
std::uint32_t tensor_crc(const Tensor& t) {
  return crc32(t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
}
}  // namespace

std::string tensor_checksums(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::json sums = nlohmann::json::object();
  for (const auto& [name, t] : tensors) sums[name] = crc32_hex(tensor_crc(t));
  return sums.dump();
}

bool verify_checksums(const SafetensorsFile& file, bool required) {
  auto it = file.metadata.find(kChecksumsKey);
  if (it == file.metadata.end()) {
    if (required) throw CheckpointError(where(file) + ": no \"crc32\" checksums in the metadata");
    return false;
  }
  const nlohmann::json sums = nlohmann::json::parse(it->second, nullptr, false);
  if (sums.is_discarded() || !sums.is_object())
    throw CheckpointError(where(file) + ": metadata \"crc32\" is not a JSON object (damaged header?)");
  std::unordered_set<std::string> present;
  for (const auto& [name, t] : file.tensors) {
    present.insert(name);
    auto s = sums.find(name);
    if (s == sums.end() || !s->is_string())
      throw CheckpointError(where(file) + ": tensor '" + printable_name(name) + "' has no checksum (damaged header?)");
    const std::string actual = crc32_hex(tensor_crc(t));
    if (s->get<std::string>() != actual)
      throw CheckpointError(where(file) + ": tensor '" + printable_name(name) + "': checksum mismatch (stored crc32 " +
                            printable_name(s->get<std::string>(), 16) + ", data has " + actual +
                            "): the file is damaged");
  }
  for (const auto& [name, value] : sums.items())
    if (!present.count(name))
      throw CheckpointError(where(file) + ": tensor '" + printable_name(name) +
                            "' is missing (the checksums list it)");
  return true;
}

}  // namespace gattn
