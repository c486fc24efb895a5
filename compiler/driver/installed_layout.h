// An installed pipec (`cmake --install`): PREFIX/bin/pipec uses the files installed beside it
// (PREFIX/share/pipec/stdlib, PREFIX/lib/pipec/libpipec_runtime.a and libpipec_capi.a,
// PREFIX/include/pipec/pipe.h) rather than the build tree's compiled-in paths, which may be gone. A pipec
// run from its build tree finds no such files and keeps the compiled-in paths.
#pragma once

#include <string>

namespace pipec {

/// Points PIPEC_STDLIB and PIPEC_RUNTIME_LIB_DIR at the installed files, unless the environment already
/// sets them or this pipec is not an installed one.
void use_installed_layout();

/// The C ABI header `pipec build` copies next to a library: the installed one, or the source tree's.
std::string capi_header_path();

}  // namespace pipec
