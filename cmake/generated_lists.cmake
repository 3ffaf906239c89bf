# Lists the build writes from the source tree, so that adding a gate kind or a sub-command is
# adding one file: the gate kinds (models/gates/*.cpp) and the commands (recipes/*/*_command.cpp).

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

# The command list (recipes/main.cpp): one line per recipes/<family>/<name>_command.cpp, which
# defines gattn::recipes::add_<name>, so a new sub-command is one new file there. Written to
# <build>/generated/gattn_generated/commands.inc, and rewritten only when the list changes.
function(gattn_generate_commands target)
  file(GLOB command_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/recipes/*/*_command.cpp)
  set(names "")
  foreach(command_file ${command_files})
    get_filename_component(file_name ${command_file} NAME_WE)
    string(REGEX REPLACE "_command$" "" name ${file_name})
    list(APPEND names ${name})
  endforeach()
  list(SORT names)
  set(lines "")
  foreach(name ${names})
    string(APPEND lines "GATTN_REGISTERED_COMMAND(${name})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/generated/gattn_generated/commands.inc CONTENT "${lines}")
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/generated)
endfunction()
