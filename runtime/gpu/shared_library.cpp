#include "runtime/gpu/shared_library.h"

#include <dlfcn.h>

namespace pipec::gpu {

void* SharedLibrary::symbol(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }

SharedLibrary open_first_library(const std::vector<std::string>& candidates, std::string& why) {
  SharedLibrary lib;
  std::string tried;
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    dlerror();
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lib.handle = h;
      lib.path = c;
      return lib;
    }
    const char* e = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += e ? e : c + ": cannot open";
  }
  why = tried.empty() ? "no candidate library names" : tried;
  return lib;
}

}  // namespace pipec::gpu
