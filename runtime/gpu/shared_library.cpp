#include "runtime/gpu/shared_library.h"

#include <dlfcn.h>
#include <link.h>

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
      lib.file = c;
      struct link_map* map = nullptr;
      if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) lib.file = map->l_name;
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
