// Test tool: writes the golden checkpoints of the export tests (tests/tools/export_models.h), one
// directory per model under OUT_DIR, for tests/interop/make_hf_export_goldens.py. The same build
// writes the same bytes (Philox-drawn weights).
// Usage: gattn_make_export_checkpoints OUT_DIR
#include <iostream>

#include "tools/export_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gattn_make_export_checkpoints OUT_DIR\n";
    return 2;
  }
  try {
    for (const gattn::test::ExportModel& m : gattn::test::export_models())
      if (m.golden) {
        gattn::test::write_export_checkpoint(std::string(argv[1]) + "/" + m.name, m);
        std::cout << m.name << " " << m.hf_class << "\n";
      }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gattn_make_export_checkpoints: " << e.what() << "\n";
    return 1;
  }
}
