// Atomic checkpoint directories and small atomic file writes.
#include "framework/io/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "framework/io/errors.h"
#include "framework/io/module_io.h"

namespace gattn {

namespace fs = std::filesystem;

std::string checkpoint_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

namespace {
void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw CheckpointError("cannot write " + tmp);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    throw CheckpointError("cannot write " + path);
  }
  fsync_path(fs::path(path).parent_path());
}

std::string write_checkpoint(const std::string& run_dir, std::int64_t step, nn::Module& model,
                             const std::map<std::string, std::string>& metadata, const nlohmann::json& state) {
  const fs::path root = fs::path(run_dir) / "checkpoints";
  const std::string name = checkpoint_name(step);
  const fs::path final_dir = root / name;
  const fs::path tmp_dir = root / (".tmp_" + name);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw CheckpointError("cannot create " + root.string() + ": " + ec.message());
  fs::remove_all(tmp_dir, ec);
  fs::create_directories(tmp_dir, ec);
  if (ec) throw CheckpointError("cannot create " + tmp_dir.string() + ": " + ec.message());
  save_module((tmp_dir / "model.safetensors").string(), model, metadata);
  write_file_atomically((tmp_dir / "state.json").string(), state.dump(2) + "\n");
  fsync_path(tmp_dir);
  // A checkpoint of the same step from an earlier attempt is replaced whole.
  fs::remove_all(final_dir, ec);
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) throw CheckpointError("cannot move " + tmp_dir.string() + " to " + final_dir.string() + ": " + ec.message());
  fsync_path(root);
  write_file_atomically((root / "latest").string(), name + "\n");
  return final_dir.string();
}

}  // namespace gattn
