# The `cmake_consumer` test: installs the build in BUILD_DIR into WORK_DIR/prefix, then configures,
# builds and runs tests/cmake_consumer against it with find_package(pipec).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=tests/cmake_consumer -DWORK_DIR=... -DGENERATOR=Ninja -P run.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
step("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix" --component cpp)
# The model the predictor serves, trained by the installed pipec.
step("train" "${WORK_DIR}/prefix/bin/pipec" run "${SOURCE_DIR}/numbers.pipe" --train halve --save
     "${WORK_DIR}/halve.safetensors" --quiet)
step("configure" ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DHALVE_WEIGHTS=${WORK_DIR}/halve.safetensors")
step("build" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
step("run" "${WORK_DIR}/build/trainer")
# BATCH=8 from the define: 12 batches of 8 (drop_remainder), 0 + ... + 95 = 4560.
set(expected "fields 2 batches 12 rows 96 sum 4560 halves ok")
string(STRIP "${step_output}" got)
if(NOT got STREQUAL expected)
  message(FATAL_ERROR "the trainer printed\n  ${got}\nnot\n  ${expected}")
endif()
message(STATUS "cmake_consumer: ${got}")
step("predict" "${WORK_DIR}/build/predictor")
set(expected "predicted 10 halves ok")
string(STRIP "${step_output}" got)
if(NOT got STREQUAL expected)
  message(FATAL_ERROR "the predictor printed\n  ${got}\nnot\n  ${expected}")
endif()
message(STATUS "cmake_consumer: ${got}")
# Passed: the install's copies of pipec and its runtime (350 MB in a sanitizer build) go; a failed run
# keeps them to look at.
file(REMOVE_RECURSE "${WORK_DIR}")
