// Per-tensor checksums in a safetensors file's `__metadata__`: the format's structure catches a
// truncated or garbled header, but not a flipped bit in the data, which would otherwise load and
// train on silently. CRC-32 is zlib's (`zlib.crc32(raw_bytes)` in Python gives the same value).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "framework/io/safetensors.h"

namespace gattn {

// The metadata key: a JSON object {tensor name: 8 lowercase hex digits of the CRC-32 of the
// tensor's raw little-endian bytes as stored in the file}.
inline constexpr const char* kChecksumsKey = "crc32";

// CRC-32 (IEEE 802.3, reflected, as zlib), continuing from `crc` (0 to start).
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0);
std::string crc32_hex(std::uint32_t crc);

// The kChecksumsKey metadata value for `tensors` (CPU tensors, in the dtype they will be stored in).
std::string tensor_checksums(const std::vector<std::pair<std::string, Tensor>>& tensors);

// Checks every tensor of `file` against the checksums in its metadata: each tensor must have one,
// each checksum must name a tensor of the file, and the bytes must match. Throws CheckpointError
// naming the file and the tensor. A file without the key (written by other tools, or before gattn
// wrote checksums) passes when `required` is false and returns false; true when verified.
bool verify_checksums(const SafetensorsFile& file, bool required);

}  // namespace gattn
