// safetensors reading and writing: the header as JSON (nlohmann-json), strict validation of every
// field against the file's size before any tensor is allocated, and atomic writes.
#include "framework/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>
#include <unordered_set>

#include "framework/base/input_file.h"

namespace gattn {

// The data section is raw little-endian bytes copied straight into tensor storage.
static_assert(std::endian::native == std::endian::little, "gattn's safetensors code assumes a little-endian host");

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

std::string printable_name(const std::string& s, std::size_t max_len) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max_len; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max_len) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

namespace {

using json = nlohmann::json;

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::i32:
      return "I32";
    case DType::bf16:
      return "BF16";
  }
  return "?";
}

bool parse_safetensors_dtype(const std::string& s, DType& out) {
  if (s == "F32")
    out = DType::f32;
  else if (s == "F64")
    out = DType::f64;
  else if (s == "I32")
    out = DType::i32;
  else if (s == "BF16")
    out = DType::bf16;
  else
    return false;
  return true;
}

// The element size of every dtype the safetensors format defines (0: not one of them), for tensors
// that are checked but not read.
std::size_t format_dtype_size(const std::string& s) {
  if (s == "BOOL" || s == "U8" || s == "I8" || s == "F8_E4M3" || s == "F8_E5M2") return 1;
  if (s == "U16" || s == "I16" || s == "F16" || s == "BF16") return 2;
  if (s == "U32" || s == "I32" || s == "F32") return 4;
  if (s == "U64" || s == "I64" || s == "F64") return 8;
  return 0;
}

// IEEE binary16 to binary32, exactly (subnormals, infinities and NaN included).
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise the mantissa
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string errno_message(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string file_label(const std::string& path) { return "safetensors file '" + path + "'"; }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CheckpointError(file_label(path) + ": " + what);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& what) {
  throw CheckpointError(file_label(path) + ": tensor '" + printable_name(name) + "': " + what);
}

std::string offsets_str(std::uint64_t begin, std::uint64_t end) {
  // Appended piece by piece: GCC 12 gives a false -Wrestrict for `"[" + std::to_string(...)` at -O3.
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += "]";
  return s;
}

// Closes the stream on every exit path.
struct FileCloser {
  std::FILE* f = nullptr;
  ~FileCloser() {
    if (f) std::fclose(f);
  }
};

void read_exact(std::FILE* f, void* dst, std::uint64_t n, const std::string& path, const std::string& what) {
  if (n == 0) return;
  if (std::fread(dst, 1, static_cast<std::size_t>(n), f) != n) {
    if (std::ferror(f)) fail(path, "read error in " + what + ": " + errno_message(errno));
    fail(path, "truncated while reading " + what);
  }
}

// One tensor as the header describes it, after validation.
struct Entry {
  std::string name;
  DType dtype = DType::f32;
  bool skipped = false;  // checked, not read (SafetensorsReadOptions::skip)
  bool f16 = false;      // F16 data, read widened to an f32 tensor
  Shape shape;
  std::uint64_t begin = 0, end = 0;
  std::size_t header_pos = 0;  // order in the header, to keep zero-size tensors in file order
};

// Thrown from the parser callback to stop parsing a header that cannot be a safetensors header.
struct HeaderReject {
  std::string why;
};

// Parses the header, rejecting duplicate keys (nlohmann would silently keep the last one) and any
// nesting deeper than a safetensors header has (which also bounds what a hostile header costs).
// `top_keys` receives the top-level keys in header order.
json parse_header(const std::string& text, const std::string& path, std::vector<std::string>& top_keys) {
  std::vector<std::unordered_set<std::string>> open_objects;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth == 0 && event == json::parse_event_t::array_start)
          throw HeaderReject{"the header is a JSON array, not an object"};
        // root object (0) -> tensor entry or __metadata__ (1) -> shape / data_offsets array (2)
        if (depth > 2) throw HeaderReject{"the header nests deeper than a safetensors header can"};
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (open_objects.empty()) break;
        if (!open_objects.back().insert(key).second)
          throw HeaderReject{depth == 1 ? "duplicate tensor name '" + printable_name(key) + "' in the header"
                                        : "duplicate key '" + printable_name(key) + "' in the header"};
        if (depth == 1) top_keys.push_back(key);
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const HeaderReject& r) {
    fail(path, r.why);
  } catch (const json::parse_error& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag: the rest says what is wrong.
    std::string what = e.what();
    if (const auto tag_end = what.find("] "); what.rfind("[json.exception", 0) == 0 && tag_end != std::string::npos)
      what.erase(0, tag_end + 2);
    fail(path, "the header is not valid JSON (byte " + std::to_string(e.byte) + "): " + printable_name(what, 200));
  } catch (const json::exception& e) {
    fail(path, "the header could not be parsed: " + printable_name(e.what(), 200));
  }
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& path) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;  // the official reader accepts an explicit null
  if (!v.is_object()) fail(path, "\"__metadata__\" is not a JSON object");
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) fail(path, "\"__metadata__\" value of '" + printable_name(key) + "' is not a string");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

Entry parse_entry(const std::string& name, const json& v, std::uint64_t data_bytes, const std::string& path,
                  const SafetensorsReadOptions& options) {
  Entry e;
  e.name = name;
  if (!v.is_object()) fail_tensor(path, name, "header entry is not a JSON object");

  auto dtype_it = v.find("dtype");
  if (dtype_it == v.end()) fail_tensor(path, name, "missing \"dtype\"");
  if (!dtype_it->is_string()) fail_tensor(path, name, "\"dtype\" is not a string");
  const std::string& dtype = dtype_it->get_ref<const std::string&>();
  std::size_t element_bytes = 0;
  e.skipped = options.skip && options.skip(name);
  if (e.skipped) {
    element_bytes = format_dtype_size(dtype);
    if (element_bytes == 0) fail_tensor(path, name, "unknown dtype '" + printable_name(dtype) + "'");
  } else if (options.widen_f16 && dtype == "F16") {
    e.f16 = true;
    element_bytes = 2;
  } else if (parse_safetensors_dtype(dtype, e.dtype)) {
    element_bytes = dtype_size(e.dtype);
  } else {
    fail_tensor(path, name,
                "unsupported dtype '" + printable_name(dtype) + "' (gattn reads F32, F64, I32, BF16" +
                    (options.widen_f16 ? ", F16)" : ")"));
  }

  auto shape_it = v.find("shape");
  if (shape_it == v.end()) fail_tensor(path, name, "missing \"shape\"");
  if (!shape_it->is_array()) fail_tensor(path, name, "\"shape\" is not an array");
  // The element count of the non-zero dimensions must fit int64 so that no later product of
  // dimensions (shape_numel, strides) can overflow, whatever order it multiplies in.
  std::int64_t nonzero_product = 1;
  bool has_zero = false;
  for (const json& d : *shape_it) {
    if (!d.is_number_integer())
      fail_tensor(
          path, name,
          "\"shape\" holds a non-integer " + printable_name(d.dump(-1, ' ', false, json::error_handler_t::replace)));
    std::int64_t dim;
    if (d.is_number_unsigned()) {
      std::uint64_t u = d.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail_tensor(path, name, "dimension " + std::to_string(u) + " is too large");
      dim = static_cast<std::int64_t>(u);
    } else {
      dim = d.get<std::int64_t>();
      if (dim < 0) fail_tensor(path, name, "negative dimension " + std::to_string(dim) + " in \"shape\"");
    }
    if (dim == 0)
      has_zero = true;
    else if (__builtin_mul_overflow(nonzero_product, dim, &nonzero_product))
      fail_tensor(path, name, "\"shape\" has more elements than fit in 64 bits");
    e.shape.push_back(dim);
  }
  const std::uint64_t numel = has_zero ? 0 : static_cast<std::uint64_t>(nonzero_product);

  auto off_it = v.find("data_offsets");
  if (off_it == v.end()) fail_tensor(path, name, "missing \"data_offsets\"");
  if (!off_it->is_array() || off_it->size() != 2 || !(*off_it)[0].is_number_unsigned() ||
      !(*off_it)[1].is_number_unsigned())
    fail_tensor(path, name, "\"data_offsets\" is not a pair of non-negative integers");
  e.begin = (*off_it)[0].get<std::uint64_t>();
  e.end = (*off_it)[1].get<std::uint64_t>();
  if (e.begin > e.end)
    fail_tensor(path, name, "data_offsets " + offsets_str(e.begin, e.end) + " end before they begin");
  if (e.end > data_bytes)
    fail_tensor(path, name,
                "data_offsets " + offsets_str(e.begin, e.end) + " reach beyond the " + std::to_string(data_bytes) +
                    " data bytes of the file (truncated?)");
  std::uint64_t bytes = 0;
  const bool too_big = __builtin_mul_overflow(numel, static_cast<std::uint64_t>(element_bytes), &bytes);
  if (too_big || bytes != e.end - e.begin)
    fail_tensor(path, name,
                "shape " + shape_str(e.shape) + " of " + dtype + " needs " +
                    (too_big ? std::string("more than 2^64") : std::to_string(bytes)) +
                    " bytes, which does not match data_offsets " + offsets_str(e.begin, e.end) + " (" +
                    std::to_string(e.end - e.begin) + " bytes)");
  return e;
}

// fsync of the directory makes the rename itself durable; best effort (not every filesystem allows it).
void sync_directory_of(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

const Tensor& SafetensorsFile::get(const std::string& name) const {
  if (const Tensor* t = find(name)) return *t;
  throw CheckpointError(file_label(path) + ": tensor '" + name + "' is missing");
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Validate everything before creating any file.
  std::unordered_set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw ValueError("save_safetensors '" + path + "': invalid tensor name '" + name + "'");
    if (!seen.insert(name).second)
      throw ValueError("save_safetensors '" + path + "': tensor name '" + name + "' given twice");
    if (!t.defined()) throw ValueError("save_safetensors '" + path + "': tensor '" + name + "' is undefined");
    if (t.device() != Device::cpu)
      throw DeviceError("save_safetensors '" + path + "': tensor '" + name + "' is on " + device_name(t.device()) +
                        "; copy it to the CPU first");
  }

  // ordered_json keeps the layout order in the header: __metadata__ first, then tensors as given
  // (the official writer's order, and what a reader scanning the header expects).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = safetensors_dtype(t.dtype());
    entry["shape"] = nlohmann::ordered_json::array();
    for (std::int64_t d : t.shape()) entry["shape"].push_back(d);
    entry["data_offsets"] = nlohmann::ordered_json::array({offset, offset + bytes});
    header[name] = std::move(entry);
    offset += bytes;
  }
  std::string header_text;
  try {
    header_text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
  } catch (const nlohmann::ordered_json::exception&) {
    throw ValueError("save_safetensors '" + path + "': a tensor name or metadata string is not valid UTF-8");
  }
  // Pad with spaces so the data starts 8-byte aligned, as the official writer does.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(header_text.size() >> (8 * i));

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw CheckpointError(file_label(path) + ": cannot create '" + tmp + "': " + errno_message(errno));
  auto write = [&](const void* p, std::size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f) != n)
      throw CheckpointError(file_label(path) + ": write to '" + tmp + "' failed: " + errno_message(errno));
  };
  try {
    write(length_bytes, 8);
    write(header_text.data(), header_text.size());
    for (const auto& [name, t] : tensors)
      write(t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)
      throw CheckpointError(file_label(path) + ": flushing '" + tmp + "' failed: " + errno_message(errno));
    std::FILE* closing = f;
    f = nullptr;
    if (std::fclose(closing) != 0)
      throw CheckpointError(file_label(path) + ": closing '" + tmp + "' failed: " + errno_message(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw CheckpointError(file_label(path) + ": renaming '" + tmp + "' into place failed: " + errno_message(errno));
  } catch (...) {
    if (f) std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  sync_directory_of(path);
}

SafetensorsFile load_safetensors(const std::string& path, const SafetensorsReadOptions& options) {
  // A FIFO or device at `path` is refused here instead of blocking the open or reading forever.
  InputFile input(path);
  if (!input.is_open()) fail(path, "cannot open: " + input.problem());
  const std::uint64_t file_size = input.size();
  FileCloser file{::fdopen(input.fd(), "rb")};
  if (!file.f) fail(path, "cannot open: " + errno_message(errno));
  input.release();  // the FILE owns the descriptor now
  if (file_size < 8)
    fail(path, "truncated: " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");

  unsigned char length_bytes[8];
  read_exact(file.f, length_bytes, 8, path, "the header length");
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<std::uint64_t>(length_bytes[i]) << (8 * i);
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                   std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (corrupt file?)");
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " is larger than the " + std::to_string(file_size - 8) +
                   " bytes after it (truncated or corrupt file)");
  const std::uint64_t data_bytes = file_size - 8 - header_len;

  std::string header_text(static_cast<std::size_t>(header_len), '\0');
  read_exact(file.f, header_text.data(), header_len, path, "the header");
  // nlohmann stops at a NUL byte as if the input ended; JSON never contains one raw, and anything
  // after it would be hidden from this reader but not from others.
  if (const auto nul = header_text.find('\0'); nul != std::string::npos)
    fail(path, "the header contains a NUL byte at byte " + std::to_string(nul) + " (not valid JSON)");
  std::vector<std::string> top_keys;
  const json header = parse_header(header_text, path, top_keys);
  if (!header.is_object()) fail(path, "the header is not a JSON object");

  SafetensorsFile out;
  out.path = path;
  std::vector<Entry> entries;
  for (std::size_t pos = 0; pos < top_keys.size(); ++pos) {
    const std::string& name = top_keys[pos];
    const json& value = header.at(name);
    if (name == "__metadata__") {
      out.metadata = parse_metadata(value, path);
      continue;
    }
    entries.push_back(parse_entry(name, value, data_bytes, path, options));
    entries.back().header_pos = pos;
  }

  // The data must be covered exactly: no overlaps, no gaps, nothing after the last tensor (as the
  // official reader demands; it keeps a file from carrying hidden payloads).
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.header_pos < b.header_pos;
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      fail_tensor(path, e.name,
                  "data_offsets " + offsets_str(e.begin, e.end) + " overlap tensor '" + printable_name(previous->name) +
                      "' " + offsets_str(previous->begin, previous->end));
    if (e.begin > covered)
      fail_tensor(path, e.name,
                  "data_offsets " + offsets_str(e.begin, e.end) + " leave bytes [" + std::to_string(covered) + ", " +
                      std::to_string(e.begin) + ") unused");
    covered = e.end;
    previous = &e;
  }
  if (covered != data_bytes)
    fail(path, std::to_string(data_bytes - covered) + " bytes of trailing data after the last tensor (" +
                   std::to_string(covered) + " of " + std::to_string(data_bytes) + " data bytes used)");

  // Everything is validated and the sizes add up to the file's: now allocate and read, in order.
  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    const std::string what = "tensor '" + printable_name(e.name) + "'";
    if (e.skipped) {
      if (e.end > e.begin && std::fseek(file.f, static_cast<long>(8 + header_len + e.end), SEEK_SET) != 0)
        fail(path, "cannot seek past " + what + ": " + errno_message(errno));
      continue;
    }
    if (e.f16) {
      std::vector<std::uint16_t> half(static_cast<std::size_t>((e.end - e.begin) / 2));
      read_exact(file.f, half.data(), e.end - e.begin, path, what);
      Tensor t = Tensor::empty(e.shape, DType::f32);
      float* dst = static_cast<float*>(t.raw_data());
      for (std::size_t i = 0; i < half.size(); ++i) dst[i] = half_to_float(half[i]);
      out.tensors.emplace_back(e.name, std::move(t));
      continue;
    }
    Tensor t = Tensor::empty(e.shape, e.dtype);
    read_exact(file.f, t.raw_data(), e.end - e.begin, path, what);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace gattn
