// The run schema: every key a gattn config accepts (run.*, model.*, data.*, train.*, eval.*,
// checkpoint.*, optim.*, regularization.*, dist.*) with its default, bounds and one line of doc.
// docs/config.md explains them; configs/example_full.yaml lists every one at its default.
#pragma once
#include "framework/config/schema.h"

namespace gattn {

// The table, in the order a resolved config.yaml writes it.
const config::Schema& run_schema();

}  // namespace gattn
