// What a gattn checkpoint file must satisfy before any of it is used (the checkpoint format): the format version
// this build reads, a checksum for every tensor (verified), a well-formed `vocab`, and finite
// values. Structure is load_safetensors' job; these are the checks on top, shared by resume, eval,
// sample and inspect so that no command uses a file another one refuses.
#pragma once
#include "framework/io/safetensors.h"

namespace gattn {

enum class ForeignFiles {
  refused,  // the file must be a gattn checkpoint ("format" metadata)
  allowed,  // a file without "format" is a weights-only file from another tool: checksums optional
};

// Throws CheckpointError naming the file (and the tensor or key): a "format" other than gattn/1
// (an unknown version: its layout may mean something else), no "format" unless `foreign` allows
// it, missing or mismatching checksums in a gattn checkpoint, a "vocab" that is not a JSON array
// of distinct byte values, a tensor holding NaN or Inf.
void verify_checkpoint_file(const SafetensorsFile& file, ForeignFiles foreign = ForeignFiles::refused);

}  // namespace gattn
