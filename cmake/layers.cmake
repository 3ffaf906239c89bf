# The layers of gattn as CMake libraries (docs/architecture.md): tensor core → ops → framework
# services → models → recipes. Each library sees only the headers of its own layer and of the
# layers below, and links only those, so an include or a call that points upward fails the build.
#
# Headers are included by their path from the repository root ("ops/attention/attention.h"). Instead of the
# root, each layer puts on its include path a folder of its own in the build tree that holds
# symbolic links to its source folders (build/layer_include/<library>/ops → ops/), so a layer finds
# what it and the layers below it hold and nothing else.

set(GATTN_LAYER_INCLUDE_ROOT ${PROJECT_BINARY_DIR}/layer_include)
# Every layer's link check (below), as one target: `cmake --build build --target gattn_layer_checks`.
add_custom_target(gattn_layer_checks)

# gattn_layer_headers(<tree> <dir>...): links <tree>/<dir> to the source folder <dir> for each dir.
function(gattn_layer_headers tree)
  foreach(dir ${ARGN})
    set(link ${GATTN_LAYER_INCLUDE_ROOT}/${tree}/${dir})
    get_filename_component(parent ${link} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${link} SYMBOLIC)
  endforeach()
endfunction()

# gattn_layer(<target> DIRS <dir>... [DEPS <library>...] [EXCLUDE <file>...])
# A static library of every .cpp under the source folders DIRS (and every .cu when the build
# compiles CUDA code), whose headers are those folders, linked to DEPS (the layers below it).
function(gattn_layer target)
  cmake_parse_arguments(LAYER "" "" "DIRS;DEPS;EXCLUDE" ${ARGN})
  set(sources "")
  set(cuda_sources "")
  foreach(dir ${LAYER_DIRS})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sources ${found})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cu)
    list(APPEND cuda_sources ${found})
  endforeach()
  foreach(file ${LAYER_EXCLUDE})
    list(REMOVE_ITEM sources ${PROJECT_SOURCE_DIR}/${file})
  endforeach()
  add_library(${target} STATIC ${sources})
  gattn_layer_headers(${target} ${LAYER_DIRS})
  target_include_directories(${target} PUBLIC ${GATTN_LAYER_INCLUDE_ROOT}/${target})
  target_link_libraries(${target} PUBLIC ${LAYER_DEPS})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${GATTN_WARNINGS}>)
  if(cuda_sources AND GATTN_CUDA_EMULATE)
    # The kernels as host C++ with the kernel language force-included. -ffp-contract=off: the
    # kernels' __fmul_rn/__fadd_rn promise single roundings, as on the GPU.
    set_source_files_properties(${cuda_sources} DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTIES LANGUAGE CXX
      COMPILE_OPTIONS "-xc++;-include;${PROJECT_SOURCE_DIR}/emulation/kernel_model.h;-ffp-contract=off;-Wno-unknown-pragmas")
    target_sources(${target} PRIVATE ${cuda_sources})
  elseif(cuda_sources AND GATTN_WITH_CUDA)
    target_sources(${target} PRIVATE ${cuda_sources})
    set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
    if(GATTN_WERROR)
      # nvcc's own warnings (and the host compiler's on the .cu files' host code) fail the build too.
      target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>)
    endif()
  endif()

  # The same rule for calls: a program that links every object of the library (whole archive) and
  # only the layers below must link, so a function the layer declares but an upper layer defines
  # (a call that no include betrays) fails the build here rather than working by accident.
  add_executable(${target}_link_check ${PROJECT_SOURCE_DIR}/cmake/layer_link_check.cpp)
  target_link_libraries(${target}_link_check PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${target}>")
  add_dependencies(gattn_layer_checks ${target}_link_check)
endfunction()
