# cmake -P script: install, configure and build the consumer, run it.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/gradscope/core/stats/stats.h include/gradscope/version.h lib/cmake/gradscope/gradscopeConfig.cmake
          bin/gradscope bin/gradscope-demo)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install lacks ${f}")
  endif()
endforeach()
# The installed run tool finds the installed demo beside it: the help is the demo's own.
step(${prefix}/bin/gradscope demo --help)
if(NOT last_output MATCHES "--mf-epochs")
  message(FATAL_ERROR "gradscope demo --help printed: ${last_output}")
endif()

# Every deprecated header path, installed and included once, so each still forwards to a header
# that compiles.
file(GLOB_RECURSE old_headers RELATIVE ${DEPRECATED_DIR} ${DEPRECATED_DIR}/gradscope/*.h)
list(REMOVE_ITEM old_headers gradscope/deprecated_header_note.h)
list(LENGTH old_headers old_count)
if(old_count EQUAL 0)
  message(FATAL_ERROR "no deprecated headers under ${DEPRECATED_DIR}")
endif()
set(every_old_path "// Written by install_test.cmake: every deprecated header path.\n")
foreach(h ${old_headers})
  if(NOT EXISTS ${prefix}/include/${h})
    message(FATAL_ERROR "install lacks the deprecated path ${h}")
  endif()
  string(APPEND every_old_path "#include \"${h}\"\n")
endforeach()
file(WRITE ${WORK_DIR}/every_old_path.cpp "${every_old_path}")

step(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}
     -DEVERY_OLD_PATH=${WORK_DIR}/every_old_path.cpp)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer_old_paths)
# An old path builds, and says where the header is now (a note under GCC).
if(NOT last_output MATCHES "deprecated header path, include \"gradscope/core/audit/rules.h\" instead")
  message(FATAL_ERROR "an old header path gave no note naming its new path:\n${last_output}")
endif()
foreach(program consumer consumer_old_paths)
  step(${WORK_DIR}/build/${program})
  if(NOT last_output MATCHES "l2=5 torch_l2=2 report=VANISHING")
    message(FATAL_ERROR "${program} printed: ${last_output}")
  endif()
  message(STATUS "${program} ok: ${last_output}")
endforeach()
message(STATUS "${old_count} deprecated header paths forward to headers that compile")
