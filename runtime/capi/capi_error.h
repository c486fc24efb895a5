// The thread-local message behind pipe_last_error (runtime/capi/pipe.h), for every exported C function
// of a built library, the served model's included (runtime/serve).
#pragma once

#include <string>

namespace pipec {

/// What pipe_last_error returns on this thread until the next failing call.
void set_capi_error(std::string message);

}  // namespace pipec
