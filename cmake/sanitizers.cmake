# Instrumented builds, each in a build folder of its own; the flags apply to every target
# defined after this file is included:
#   GRADSCOPE_SANITIZE=ON    every library, program and test under ASan + UBSan
#                            (make test-sanitize, in <build>/sanitize)
#   GRADSCOPE_FUZZ_BUILD=ON  the clang build of the fuzz targets that cmake/fuzz.cmake
#                            configures in <build>/fuzz: ASan + UBSan plus libFuzzer's coverage
# Any UBSan finding aborts (-fno-sanitize-recover), so a test or a fuzz run fails on it.
set(GRADSCOPE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
set(GRADSCOPE_SANITIZER_LINK_FLAGS -fsanitize=address,undefined)

if(GRADSCOPE_SANITIZE OR GRADSCOPE_FUZZ_BUILD)
  add_compile_options(${GRADSCOPE_SANITIZER_FLAGS})
  add_link_options(${GRADSCOPE_SANITIZER_LINK_FLAGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's manual: sanitizers raise the rate of false -Wmaybe-uninitialized warnings (here in
    # LibTorch's and libstdc++'s headers).
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()
if(GRADSCOPE_FUZZ_BUILD)
  add_compile_options(-fsanitize=fuzzer-no-link)  # coverage for libFuzzer; fuzz targets link -fsanitize=fuzzer
endif()

# A sanitized static library needs the sanitizer runtime wherever it is linked, in a consumer
# of the installed package too (tests/install builds one): its link options travel with it.
function(gradscope_export_sanitizer_runtime)
  if(NOT GRADSCOPE_SANITIZE)
    return()
  endif()
  foreach(target IN ITEMS gradscope_core gradscope_io gradscope_torch)
    if(TARGET ${target})
      target_link_options(${target} INTERFACE ${GRADSCOPE_SANITIZER_LINK_FLAGS})
    endif()
  endforeach()
endfunction()
