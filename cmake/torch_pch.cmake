# Precompiled LibTorch headers. Every translation unit that includes LibTorch first parses the
# same headers (ATen, torch::nn, torch::optim): about 7 of the 18 s an audit test took to
# compile here (docs/benchmarks.md, "Build time"). Two hosts compile them once, one for
# libraries (-fPIC) and one for programs (-fPIE), since GCC refuses a precompiled header built
# with the other setting; each target that includes LibTorch reuses the matching one through
# gradscope_use_torch_pch. -Winvalid-pch says so in the build log should one not be usable,
# and the compiler then reads the headers as usual. GRADSCOPE_TORCH_PCH=OFF turns it all off.
option(GRADSCOPE_TORCH_PCH "Precompile the LibTorch headers once for the targets that include them" ON)

# The headers most of those translation units include (a header they do not include costs them
# nothing but the load of a larger file).
set(GRADSCOPE_TORCH_PCH_HEADERS
  <ATen/ATen.h>
  <torch/nn/modules/activation.h>
  <torch/nn/modules/container/sequential.h>
  <torch/nn/modules/conv.h>
  <torch/nn/modules/embedding.h>
  <torch/nn/modules/linear.h>
  <torch/nn/functional/loss.h>
  <torch/optim/adam.h>
  <torch/optim/sgd.h>)

if(GRADSCOPE_TORCH_PCH AND GRADSCOPE_BUILD_TORCH)
  set(anchor ${PROJECT_BINARY_DIR}/torch_pch/anchor.cpp)
  # CONFIGURE writes only when the text changes, so a new configure rebuilds nothing.
  file(CONFIGURE OUTPUT ${anchor}
       CONTENT "// Compiles the precompiled LibTorch headers (cmake/torch_pch.cmake).\nint main() { return 0; }\n")
  add_library(gradscope_torch_pch_library OBJECT ${anchor})
  add_executable(gradscope_torch_pch_program ${anchor})
  foreach(host gradscope_torch_pch_library gradscope_torch_pch_program)
    target_link_libraries(${host} PRIVATE torch)
    target_precompile_headers(${host} PRIVATE ${GRADSCOPE_TORCH_PCH_HEADERS})
  endforeach()
endif()

# Makes each of the given targets (libraries or programs that link LibTorch) reuse the
# precompiled headers of its kind.
function(gradscope_use_torch_pch)
  if(NOT TARGET gradscope_torch_pch_library)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${target} REUSE_FROM gradscope_torch_pch_program)
    else()
      target_precompile_headers(${target} REUSE_FROM gradscope_torch_pch_library)
    endif()
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
endfunction()

# The same for every target defined so far in the calling directory (its CMakeLists.txt).
function(gradscope_use_torch_pch_in_directory)
  get_directory_property(targets BUILDSYSTEM_TARGETS)
  set(chosen "")
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE" OR type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
      list(APPEND chosen ${target})
    endif()
  endforeach()
  gradscope_use_torch_pch(${chosen})
endfunction()
