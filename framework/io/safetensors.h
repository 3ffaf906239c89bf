// safetensors files (docs/checkpoint-format.md): an 8-byte little-endian header length, a JSON header, raw data.
// Readable by the `safetensors` Python package and plain numpy; reading validates every field
// before touching memory, so no file, however damaged, can crash the reader.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "framework/io/errors.h"

namespace gattn {

// The `format` metadata value of gattn checkpoints (docs/checkpoint-format.md).
inline constexpr const char* kCheckpointFormat = "gattn/1";

// Largest JSON header the reader accepts; the same cap as the official implementation, far above
// what a model's header needs, and it bounds the memory a hostile file can make us allocate.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsFile {
  std::string path;                                     // where it was read from, for error messages
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file (data) order
  std::map<std::string, std::string> metadata;          // the header's "__metadata__"

  // The tensor with this name, or nullptr.
  const Tensor* find(const std::string& name) const;
  // The tensor with this name; throws CheckpointError naming the file and the tensor when absent.
  const Tensor& get(const std::string& name) const;
};

// Writes `tensors` (CPU tensors of f32/f64/i32/bf16, laid out contiguously in the given order)
// and `metadata` to `path` atomically: the data goes to `path + ".tmp"`, is fsynced and then
// renamed over `path`, so a failure never leaves a partial file at `path`.
// Throws ValueError for an undefined tensor or a bad / duplicate name ("" or "__metadata__"),
// DeviceError for a non-CPU tensor, CheckpointError when the file cannot be written.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// What a reader of other tools' files (framework/io/hf_checkpoint.h) accepts beyond gattn's own
// files; the defaults read gattn checkpoints as they are written.
struct SafetensorsReadOptions {
  // F16 tensors are read as F32. Every f16 value is an f32, so nothing is lost; gattn has no f16
  // tensors to keep them in.
  bool widen_f16 = false;
  // Tensors for which this returns true are checked like every other (shape, offsets, a dtype
  // safetensors defines: BOOL, U8 … F64) but not read, and are absent from the result.
  std::function<bool(const std::string&)> skip;
};

// Reads a safetensors file with dtypes F32, F64, I32 and BF16 (and what `options` allows). Throws
// CheckpointError, naming the file (and the tensor where there is one), for anything that is not a
// well-formed file: missing or unreadable, truncated, oversized or invalid header, missing or
// ill-typed fields, unknown dtypes, bad shapes, data_offsets out of range, overlapping, leaving
// gaps or not matching the shape, duplicate names, or bytes after the last tensor.
SafetensorsFile load_safetensors(const std::string& path, const SafetensorsReadOptions& options = {});

// `s` for an error message: names and header text come from untrusted files, so non-printable
// bytes become \xNN and long strings are cut to `max_len` characters.
std::string printable_name(const std::string& s, std::size_t max_len = 120);

}  // namespace gattn
