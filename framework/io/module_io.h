// Saving and loading a Module's parameters as a safetensors file (names as in models/README.md, F32 data).
#pragma once
#include <map>
#include <string>

#include "framework/io/safetensors.h"
#include "framework/nn/module.h"

namespace gattn {

// Writes every parameter of `m` as F32 (converting other dtypes), named by its dotted path, in
// visit order, atomically (see save_safetensors), with per-tensor checksums (checksums.h) added to
// `metadata`.
void save_module(const std::string& path, nn::Module& m, const std::map<std::string, std::string>& metadata = {});

// Copies the tensors of `path` into the module's existing parameters (so handles the module and
// the optimizer hold stay valid), converting to each parameter's dtype. The file must hold exactly
// the module's parameters: a missing tensor, a shape mismatch, a non-floating dtype or an extra
// tensor throws CheckpointError naming the file and the tensor, and then no parameter has changed.
// Checksums in the metadata are verified first (a file without them, from other tools, is read as
// is). Returns the file's metadata.
std::map<std::string, std::string> load_module(const std::string& path, nn::Module& m);
// The same from a file already read (and checksum-verified by the caller where it wants that).
std::map<std::string, std::string> load_module(const SafetensorsFile& file, nn::Module& m);

}  // namespace gattn
