// Where gattn's commands may write. Writers replace a file by renaming a new one over it, or append
// to it (metrics.jsonl): done blindly, a symlink given as the output becomes a plain file, a FIFO
// blocks or is replaced, a device node is replaced (as root), and an output that names a run's own
// metrics or checkpoint destroys the run. Every command checks each path it will write with these
// before it writes its first byte; each refusal is an OutputPathError (exit 2) naming the path.
#pragma once
#include <filesystem>
#include <string>

namespace gattn {

// "a symbolic link", "a FIFO", "a directory", ... for what is at `path` when it exists and is not
// a regular file (the link itself, not its target); "" for a regular file or nothing.
std::string non_regular_kind(const std::filesystem::path& path);

// True when `dir` holds a gattn run: its lock (.lock), metrics.jsonl, or a checkpoints/ folder
// with a `latest` or a step directory.
bool holds_run(const std::string& dir);

// What `path` is to a run ("the metrics.jsonl of the run in DIR", "inside the checkpoints of the
// run in DIR", "inside the checkpoint directory DIR"), or "" when it belongs to none. Paths are
// compared after resolving symlinks in the directories above them.
std::string run_file_of(const std::string& path);

// Refuses `path`, an output file given as `what` (e.g. "report --output"), when it exists as
// anything but a regular file or belongs to a run.
void check_output_file(const std::string& path, const std::string& what);

// Refuses `dir` as a run directory (`what`: e.g. "run.dir") unless it is new, empty, or holds a
// gattn run whose own files (config.yaml, metrics.jsonl, .lock, checkpoints/latest) are regular
// files: a folder holding anything else (a user's config.yaml, say) would be written into. A
// folder inside another run's checkpoints is refused too. A directory that cannot be listed is a
// CheckpointError (exit 3).
void check_run_directory(const std::string& dir, const std::string& what);

}  // namespace gattn
