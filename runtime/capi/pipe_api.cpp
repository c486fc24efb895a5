// The exported C functions of a built library (runtime/capi/pipe.h): argument checks, exceptions
// turned into -1/NULL and a thread-local message, and the embedded plan decoded once per process.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "runtime/capi/capi_error.h"
#include "runtime/capi/dlpack_export.h"
#include "runtime/capi/embedded.h"
#include "runtime/capi/pipe.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/plan/plan_serialize.h"

struct pipe_handle {
  pipec::PipeHandle impl;
};

namespace {

thread_local std::string t_last_error;

void set_error(std::string msg) { t_last_error = std::move(msg); }

// Decoded on first use; a library whose plan does not decode keeps failing with the same message.
const pipec::PipeLibrary& embedded_library() {
  static std::once_flag once;
  static pipec::PipeLibrary lib;
  static std::string error;
  std::call_once(once, [] {
    try {
      if (!pipec_embedded_plan || !&pipec_embedded_plan_size)
        throw std::runtime_error("this program carries no pipec plan (build it with `pipec build`)");
      std::string_view blob(reinterpret_cast<const char*>(pipec_embedded_plan), pipec_embedded_plan_size);
      lib.plan = pipec::decode_plan(blob, "the library's embedded plan");
      lib.spec_dir = pipec_embedded_spec_dir ? pipec_embedded_spec_dir : "";
      if (pipec_embedded_kernels)
        for (const pipec_embedded_kernel* k = pipec_embedded_kernels; k->symbol; ++k)
          lib.kernels.push_back({k->symbol, k->fn});
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw std::runtime_error(error);
  return lib;
}

bool check_field(const pipe_handle* h, int32_t i, const char* fn) {
  if (!h) {
    set_error(fmt::format("{}: the handle is NULL", fn));
    return false;
  }
  if (i < 0 || static_cast<size_t>(i) >= h->impl.fields().size()) {
    set_error(fmt::format("{}: field index {} is not in [0, {})", fn, i, h->impl.fields().size()));
    return false;
  }
  return true;
}

}  // namespace

void pipec::set_capi_error(std::string message) { set_error(std::move(message)); }

extern "C" {

void pipe_options_init(pipe_options* o) {
  if (o) std::memset(o, 0, sizeof *o);
}

int32_t pipe_abi_version(void) { return PIPE_ABI_VERSION; }

const char* pipe_pipeline_name(void) {
  try {
    return embedded_library().plan.name.c_str();
  } catch (const std::exception& e) {
    set_error(e.what());
    return "";
  }
}

const char* pipe_spec_dir(void) { return pipec_embedded_spec_dir ? pipec_embedded_spec_dir : ""; }

pipe_handle* pipe_open(const pipe_options* options) {
  pipe_options defaults;
  pipe_options_init(&defaults);
  try {
    return new pipe_handle{pipec::PipeHandle(embedded_library(), options ? *options : defaults)};
  } catch (const std::exception& e) {
    set_error(fmt::format("pipe_open: {}", e.what()));
    return nullptr;
  }
}

int32_t pipe_num_fields(const pipe_handle* h) {
  if (!h) {
    set_error("pipe_num_fields: the handle is NULL");
    return -1;
  }
  return static_cast<int32_t>(h->impl.fields().size());
}

const char* pipe_field_name(const pipe_handle* h, int32_t i) {
  return check_field(h, i, "pipe_field_name") ? h->impl.fields()[i].name.c_str() : nullptr;
}

DLDataType pipe_field_dtype(const pipe_handle* h, int32_t i) {
  if (!check_field(h, i, "pipe_field_dtype")) return DLDataType{0, 0, 0};
  return pipec::dlpack_dtype(h->impl.fields()[i].type->dtype).value_or(DLDataType{0, 0, 0});
}

int32_t pipe_field_ndim(const pipe_handle* h, int32_t i) {
  return check_field(h, i, "pipe_field_ndim") ? static_cast<int32_t>(h->impl.fields()[i].type->rank()) : -1;
}

int64_t pipe_field_dim(const pipe_handle* h, int32_t i, int32_t d) {
  if (!check_field(h, i, "pipe_field_dim")) return -2;
  const auto& shape = h->impl.fields()[i].type->shape;
  if (d < 0 || static_cast<size_t>(d) >= shape.size()) {
    set_error(fmt::format("pipe_field_dim: dimension {} is not in [0, {})", d, shape.size()));
    return -2;
  }
  return shape[d] < 0 ? -1 : shape[d];
}

int32_t pipe_compiled_kernels(const pipe_handle* h) {
  if (!h) {
    set_error("pipe_compiled_kernels: the handle is NULL");
    return -1;
  }
  return h->impl.compiled_kernels();
}

int pipe_next(pipe_handle* h, DLManagedTensor** out_fields) {
  if (!h || !out_fields) {
    set_error("pipe_next: the handle or the output array is NULL");
    return -1;
  }
  try {
    return h->impl.next(out_fields) ? 1 : 0;
  } catch (const std::exception& e) {
    set_error(e.what());
    return -1;
  }
}

int pipe_save_state(pipe_handle* h, void** buf, size_t* len) {
  if (!h || !buf || !len) {
    set_error("pipe_save_state: the handle, buf or len is NULL");
    return -1;
  }
  try {
    std::string state = h->impl.save_state();
    void* p = std::malloc(state.size() ? state.size() : 1);
    if (!p) throw std::bad_alloc();
    std::memcpy(p, state.data(), state.size());
    *buf = p;
    *len = state.size();
    return 0;
  } catch (const std::exception& e) {
    set_error(fmt::format("pipe_save_state: {}", e.what()));
    return -1;
  }
}

void pipe_free_state(void* buf) { std::free(buf); }

int pipe_restore_state(pipe_handle* h, const void* buf, size_t len) {
  if (!h || (!buf && len)) {
    set_error("pipe_restore_state: the handle or buf is NULL");
    return -1;
  }
  try {
    h->impl.restore_state(buf ? std::string(static_cast<const char*>(buf), len) : std::string());
    return 0;
  } catch (const std::exception& e) {
    set_error(e.what());
    return -1;
  }
}

void pipe_close(pipe_handle* h) { delete h; }

const char* pipe_last_error(void) { return t_last_error.c_str(); }

int64_t pipe_live_tensors(void) { return pipec::live_exported_tensors(); }

}  // extern "C"
