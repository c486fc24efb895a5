# find_package(pipec): the installed pipec compiler (pipec::pipec), the C ABI header (pipec::capi), and
#
#   pipec_add_library(NAME SPEC file [PIPELINE name | TRAIN block WEIGHTS file.safetensors]
#                     [DEFINES NAME=VALUE...] [IMPORT_DIRS dir...])
#
# which runs `pipec build` at build time (again when the spec or the weights change) and makes the
# imported target NAME: libNAME.so with libNAME.h and pipe.h on its include path (docs/capi.md,
# docs/python.md). With TRAIN and WEIGHTS the library serves that train block's model (pipe_predict).
get_filename_component(_pipec_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(PIPEC_EXECUTABLE "${_pipec_prefix}/bin/pipec")
set(PIPEC_INCLUDE_DIR "${_pipec_prefix}/include/pipec")
if(NOT EXISTS "${PIPEC_EXECUTABLE}" OR NOT EXISTS "${PIPEC_INCLUDE_DIR}/pipe.h")
  set(pipec_FOUND FALSE)
  set(pipec_NOT_FOUND_MESSAGE "the pipec install in ${_pipec_prefix} lacks bin/pipec or include/pipec/pipe.h")
  return()
endif()

# PIPEC_LINK_OPTIONS: what a program that loads a built library must link (a sanitized pipec's runtime).
set(PIPEC_LINK_OPTIONS "")
include("${CMAKE_CURRENT_LIST_DIR}/pipecLinkOptions.cmake" OPTIONAL)

if(NOT TARGET pipec::pipec)
  add_executable(pipec::pipec IMPORTED)
  set_target_properties(pipec::pipec PROPERTIES IMPORTED_LOCATION "${PIPEC_EXECUTABLE}")
endif()
if(NOT TARGET pipec::capi)
  add_library(pipec::capi INTERFACE IMPORTED)
  set_target_properties(pipec::capi PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${PIPEC_INCLUDE_DIR}")
endif()

function(pipec_add_library name)
  cmake_parse_arguments(ARG "" "SPEC;PIPELINE;TRAIN;WEIGHTS" "DEFINES;IMPORT_DIRS" ${ARGN})
  if(NOT ARG_SPEC)
    message(FATAL_ERROR "pipec_add_library(${name}): SPEC is required")
  endif()
  if((ARG_TRAIN AND NOT ARG_WEIGHTS) OR (ARG_WEIGHTS AND NOT ARG_TRAIN))
    message(FATAL_ERROR "pipec_add_library(${name}): TRAIN and WEIGHTS go together")
  endif()
  get_filename_component(spec "${ARG_SPEC}" ABSOLUTE)
  set(depends "${spec}")
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/pipec_${name}")
  set(lib "${out_dir}/lib${name}.so")
  file(MAKE_DIRECTORY "${out_dir}")  # imported targets' include folders must exist when CMake generates
  set(args build "${spec}" -o "${lib}" -q)
  if(ARG_PIPELINE)
    list(APPEND args --pipeline "${ARG_PIPELINE}")
  endif()
  if(ARG_TRAIN)
    get_filename_component(weights "${ARG_WEIGHTS}" ABSOLUTE)
    list(APPEND args --train "${ARG_TRAIN}" --weights "${weights}")
    list(APPEND depends "${weights}")
  endif()
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND args -D "${d}")
  endforeach()
  foreach(d IN LISTS ARG_IMPORT_DIRS)
    list(APPEND args -I "${d}")
  endforeach()
  add_custom_command(OUTPUT "${lib}" "${out_dir}/lib${name}.h" "${out_dir}/pipe.h"
                     COMMAND pipec::pipec ${args}
                     DEPENDS ${depends}
                     COMMENT "pipec build ${ARG_SPEC} -> lib${name}.so"
                     VERBATIM)
  add_custom_target(${name}_pipec_build DEPENDS "${lib}")
  add_library(${name} SHARED IMPORTED GLOBAL)
  # `pipec build` sets no SONAME: link with -l (so the library is needed by name, found through the
  # rpath CMake adds for it), not by a path relative to the build folder.
  set_target_properties(${name} PROPERTIES IMPORTED_LOCATION "${lib}" IMPORTED_NO_SONAME TRUE
                                           INTERFACE_INCLUDE_DIRECTORIES "${out_dir}"
                                           INTERFACE_LINK_OPTIONS "${PIPEC_LINK_OPTIONS}")
  add_dependencies(${name} ${name}_pipec_build)
endfunction()
