// The checks every checkpoint file passes before its tensors or metadata are used.
#include "framework/io/checkpoint_verify.h"

#include <nlohmann/json.hpp>

#include "framework/io/byte_vocab.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/checksums.h"
#include "framework/io/errors.h"
#include "framework/io/finite_check.h"

namespace gattn {

namespace {

std::string where(const SafetensorsFile& file) { return "checkpoint file '" + file.path + "'"; }

// The checkpoint format's vocab: the byte values of the text, index = token id, null at the ids a
// sequence-to-sequence vocabulary reserves. A damaged list would map the model's tokens to other
// characters (eval on the wrong text, garbled samples) without any error.
void check_vocab(const SafetensorsFile& file) {
  auto it = file.metadata.find("vocab");
  if (it == file.metadata.end()) return;
  if (!ByteVocab::from_json(it->second))
    throw CheckpointError(where(file) +
                          ": metadata \"vocab\" is not a JSON array of distinct byte values 0-255 and nulls (got '" +
                          printable_name(it->second, 40) + "'; damaged header?)");
}

}  // namespace

void verify_checkpoint_file(const SafetensorsFile& file, ForeignFiles foreign) {
  auto format = file.metadata.find("format");
  const bool gattn_file = format != file.metadata.end();
  if (!gattn_file && foreign == ForeignFiles::refused)
    throw CheckpointError(where(file) + ": no \"format\" metadata: not a gattn checkpoint (expected \"" +
                          std::string(kCheckpointFormat) + "\")");
  if (gattn_file && format->second != kCheckpointFormat)
    throw CheckpointError(where(file) + ": format '" + printable_name(format->second, 40) +
                          "' is not one this build reads (\"" + kCheckpointFormat + "\")");
  // A gattn checkpoint always carries checksums: one without them was edited or damaged.
  verify_checksums(file, /*required=*/gattn_file);
  check_vocab(file);
  tokenizer_from_metadata(file.metadata, where(file));  // a damaged tokenizer entry is refused here
  check_finite_tensors(file);
}

}  // namespace gattn
