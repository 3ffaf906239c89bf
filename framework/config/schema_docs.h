// What a schema says about itself, for people: the annotated example config (every key at its
// default with its doc as a comment) and the markdown table of the keys. gattn's run schema prints
// them with `gattn config example` and `gattn config keys` (configs/example_full.yaml and
// docs/config.md hold the output, and a test keeps them equal to it).
#pragma once
#include <string>

#include "framework/config/schema.h"

namespace gattn::config {

// YAML that loads as the defaults: nested sections in the schema's order, each key at its default
// followed by `# <doc>` (comments aligned), a key's example written commented out below it.
std::string example_yaml(const Schema& schema);

// A markdown table: key, default, the values it takes (type, bounds, choices, null), and its doc.
std::string keys_markdown(const Schema& schema);

}  // namespace gattn::config
