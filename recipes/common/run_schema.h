// The run schema: every key a gattn config accepts (run.*, model.*, data.*, train.*, eval.*,
// checkpoint.*, optim.*, regularization.*, dist.*) with its default, bounds and one line of doc.
// `gattn config example` (configs/example_full.yaml) and `gattn config keys` (docs/config.md's key
// table) are generated from it.
#pragma once
#include "framework/config/schema.h"

namespace gattn {

// The table, in the order a resolved config.yaml writes it.
const config::Schema& run_schema();

}  // namespace gattn
