# The gate registry's list (models/gating/registry.h): one line per kind file in models/gates/, so a
# new kind is one new file there. Written to <build>/generated/gattn_generated/gate_kinds.inc, and
# rewritten only when the list changes.
function(gattn_generate_gate_kinds target)
  file(GLOB kind_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/gates/*.cpp)
  set(lines "")
  foreach(kind_file ${kind_files})
    get_filename_component(kind ${kind_file} NAME_WE)
    string(APPEND lines "GATTN_REGISTERED_GATE_KIND(${kind})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/generated/gattn_generated/gate_kinds.inc CONTENT "${lines}")
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/generated)
endfunction()
