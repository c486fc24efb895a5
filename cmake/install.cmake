# `cmake --install build --prefix PREFIX`: pipec for C++ consumers. PREFIX/bin/pipec, the C ABI header
# PREFIX/include/pipec/pipe.h, the runtime libraries a built spec links (PREFIX/lib/pipec), the Pipe
# standard library (PREFIX/share/pipec/stdlib), and the CMake package (PREFIX/lib/cmake/pipec) whose
# pipec_add_library() builds a spec's library at build time. An installed pipec finds these files beside
# itself (compiler/driver/installed_layout.h). The Python module installs only into wheels (python/).
include(CMakePackageConfigHelpers)
install(TARGETS pipec RUNTIME DESTINATION bin COMPONENT cpp)
install(TARGETS pipec_runtime pipec_capi pipec_serve pipec_train_fast pipec_train_dnnl ARCHIVE DESTINATION lib/pipec COMPONENT cpp)
install(FILES ${CMAKE_SOURCE_DIR}/runtime/capi/pipe.h DESTINATION include/pipec COMPONENT cpp)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib/ DESTINATION share/pipec/stdlib COMPONENT cpp)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pipecConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
# A pipec built with sanitizers links the libraries it builds against their runtimes, so the programs
# that load such a library must link them too (the runtime has to come first): pipec_add_library's
# targets carry these options.
file(WRITE ${CMAKE_BINARY_DIR}/pipecLinkOptions.cmake "set(PIPEC_LINK_OPTIONS \"${PIPEC_SANITIZER_LINK}\")\n")
install(FILES ${CMAKE_SOURCE_DIR}/cmake/pipecConfig.cmake ${CMAKE_BINARY_DIR}/pipecConfigVersion.cmake
              ${CMAKE_BINARY_DIR}/pipecLinkOptions.cmake
        DESTINATION lib/cmake/pipec COMPONENT cpp)
