# The fuzz targets (tests/fuzz) need clang's libFuzzer, while the project builds with the
# default compiler: they are built by a second configure of this source tree with clang, in
# <build>/fuzz (core, io, the tree readers and the CLI's readers only, no LibTorch), as part of
# this build.
# Their ctest tests:
#   fuzz.seeds   writes the seed corpus into <build>/fuzz/seeds (a fixture of the others)
#   fuzz.NAME    runs NAME_fuzz for GRADSCOPE_FUZZ_TEST_SECONDS (or less, as targets.txt says)
#                with libFuzzer seed 1, from the seeds alone; a crashing input is kept in
#                <build>/fuzz/crashes/NAME/
# `make fuzz` runs them longer. docs/reliability.md says what was tried and what a crash means.
include(ExternalProject)

set(GRADSCOPE_FUZZ_TEST_SECONDS 30 CACHE STRING "Seconds each fuzz target runs in ctest (make test)")
find_program(GRADSCOPE_FUZZ_CXX NAMES clang++ clang++-14)
if(NOT GRADSCOPE_FUZZ_CXX)
  message(FATAL_ERROR "gradscope: the fuzz targets need clang++ and libFuzzer (Debian: clang "
    "libclang-rt-dev; `make deps` installs them), or configure with -DGRADSCOPE_FUZZ=OFF")
endif()

set(GRADSCOPE_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
ExternalProject_Add(gradscope_fuzz
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${GRADSCOPE_FUZZ_DIR}
  CMAKE_ARGS
    -DCMAKE_CXX_COMPILER=${GRADSCOPE_FUZZ_CXX}
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DGRADSCOPE_FUZZ_BUILD=ON -DGRADSCOPE_FUZZ=OFF
    -DGRADSCOPE_BUILD_TORCH=OFF -DGRADSCOPE_BUILD_TESTS=OFF -DGRADSCOPE_BUILD_BENCH=OFF
    -DGRADSCOPE_PYTHON=${GRADSCOPE_PYTHON}  # the venv's: the HTML page's chart bundle comes from it
  BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target gradscope_fuzz_targets
  BUILD_ALWAYS ON  # the inner build knows its own dependencies; a no-op build takes a moment
  INSTALL_COMMAND "")

set(targets_file ${PROJECT_SOURCE_DIR}/tests/fuzz/targets.txt)
file(STRINGS ${targets_file} target_lines REGEX "^[a-z0-9_]+( [0-9]+)?$")  # NAME [SECONDS]
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${targets_file})

add_test(NAME fuzz.seeds COMMAND ${GRADSCOPE_FUZZ_DIR}/fuzz_seeds ${GRADSCOPE_FUZZ_DIR}/seeds)
set_tests_properties(fuzz.seeds PROPERTIES FIXTURES_SETUP gradscope_fuzz_seeds LABELS fuzz)
foreach(line IN LISTS target_lines)
  string(REGEX MATCH "^[a-z0-9_]+" name "${line}")
  set(seconds ${GRADSCOPE_FUZZ_TEST_SECONDS})
  if(line MATCHES " ([0-9]+)$" AND CMAKE_MATCH_1 LESS seconds)
    set(seconds ${CMAKE_MATCH_1})
  endif()
  add_test(NAME fuzz.${name}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/fuzz/run_fuzzer.sh ${GRADSCOPE_FUZZ_DIR} ${name}
      ${seconds} 1 ${GRADSCOPE_FUZZ_DIR}/ctest-corpus/${name} --fresh)
  math(EXPR timeout "${seconds} + 120")  # slack: start-up, the seeds' first pass
  set_tests_properties(fuzz.${name} PROPERTIES FIXTURES_REQUIRED gradscope_fuzz_seeds LABELS fuzz
    TIMEOUT ${timeout})
endforeach()
