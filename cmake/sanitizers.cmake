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
endif()
if(GRADSCOPE_FUZZ_BUILD)
  add_compile_options(-fsanitize=fuzzer-no-link)  # coverage for libFuzzer; fuzz targets link -fsanitize=fuzzer
endif()

