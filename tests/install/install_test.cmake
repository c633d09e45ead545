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

step(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer)
# Only the headers' own paths are installed: gradscope 0.1 was never released with the flat
# paths the domain folders replaced, so no forwarding headers are kept for them.
foreach(old include/gradscope/core/rules.h include/gradscope/io/json.h include/gradscope/deprecated_header_note.h)
  if(EXISTS ${prefix}/${old})
    message(FATAL_ERROR "install has the old path ${old}")
  endif()
endforeach()
foreach(program consumer)
  step(${WORK_DIR}/build/${program})
  if(NOT last_output MATCHES "l2=5 torch_l2=2 report=VANISHING")
    message(FATAL_ERROR "${program} printed: ${last_output}")
  endif()
  message(STATUS "${program} ok: ${last_output}")
endforeach()
