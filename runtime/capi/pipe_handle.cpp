#include "runtime/capi/pipe_handle.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/capi/dlpack_export.h"
#include "runtime/plan/shard_plan.h"

namespace pipec {

namespace {

constexpr uint32_t kHandleStateVersion = 1;

}  // namespace

// A plan naming a kernel the library does not carry is refused rather than silently interpreted, since
// that means the library was built wrong. A flat_map's inner pipeline gets a copy with its kernels bound.
int bind_kernels(Plan& plan, const std::vector<KernelSymbol>& kernels) {
  int bound_count = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    Stage& s = plan.stages[i];
    if (s.inner) {
      Plan inner = *s.inner;
      bound_count += bind_kernels(inner, kernels);
      s.inner = std::make_shared<const Plan>(std::move(inner));
    }
    if (!s.native) continue;
    PipecKernelFn fn = nullptr;
    for (const KernelSymbol& k : kernels)
      if (k.symbol && s.native->symbol == k.symbol) fn = k.fn;
    if (!fn)
      throw std::runtime_error(
          fmt::format("{}: stage #{} {}: kernel `{}` is not in this library (was it built by an older pipec?)",
                      s.loc.to_string(), i, stage_name(s.kind), s.native->symbol));
    auto bound = std::make_shared<NativeKernel>(*s.native);
    bound->fn = fn;
    if (bound->backend.empty()) bound->backend = "aot";
    s.native = bound;
    ++bound_count;
  }
  return bound_count;
}

std::string capi_element_problem(const ElementInfo& element) {
  if (element.is_sink) return "the pipeline ends in write(...), so it has no elements to read";
  if (element.fields.empty()) return "the pipeline's element has no fields";
  for (const Field& f : element.fields) {
    if (!f.type || !f.type->is_tensor()) return fmt::format("field `{}` is not a tensor", f.name);
    if (!dlpack_dtype(f.type->dtype))
      return fmt::format("field `{}` is a byte string, which DLPack cannot carry; decode or convert it in a map first",
                         f.name);
  }
  return "";
}

PipeHandle::PipeHandle(const PipeLibrary& lib, const pipe_options& o, const HostRunOptions& host) {
  if (lib.plan.stages.empty()) throw std::runtime_error("the library's plan has no stages");
  if (std::string why = capi_element_problem(lib.plan.stages.back().element); !why.empty())
    throw std::runtime_error(why);
  if (o.threads < 0 || o.threads > 1024)
    throw std::invalid_argument(fmt::format("threads must be between 0 (one per core) and 1024, not {}", o.threads));
  Plan plan = shard_after_sources(lib.plan, o.shard_count, o.shard_index);
  compiled_kernels_ = bind_kernels(plan, lib.kernels);
  if (auto problems = verify_plan(plan); !problems.empty())
    throw std::runtime_error("the library's plan does not verify: " + problems.front());
  fields_ = plan.stages.back().element.fields;
  RunOptions ro;
  ro.seed = o.seed;
  ro.threads = o.threads;
  ro.spec_dir = o.data_dir && *o.data_dir ? o.data_dir : lib.spec_dir;
  ro.cancel = host.cancel;
  ro.device = host.device;
  run_ = std::make_unique<PipelineRun>(plan, ro);
}

bool PipeHandle::next(DLManagedTensor** out) {
  while (next_row_ >= pending_.rows) {
    Chunk c;
    if (!run_->next(c)) return false;
    pending_ = std::move(c);
    next_row_ = 0;
  }
  const size_t n = fields_.size();
  if (pending_.columns.size() != n)
    throw std::runtime_error(fmt::format("the run produced {} columns for {} fields", pending_.columns.size(), n));
  std::vector<DLManagedTensor*> made;
  try {
    for (size_t k = 0; k < n; ++k) made.push_back(export_row(pending_.columns[k], next_row_));
  } catch (...) {
    for (DLManagedTensor* t : made) t->deleter(t);
    throw;
  }
  for (size_t k = 0; k < n; ++k) out[k] = made[k];
  ++next_row_;
  return true;
}

std::string PipeHandle::save_state() {
  StateWriter w(kHandleStateVersion);
  w.write_string(run_->save_state());
  // Rows of the current chunk not handed out yet belong to the state: the run is already past them.
  const bool pending = next_row_ < pending_.rows;
  w.write_u32(pending ? 1 : 0);
  if (pending) save_chunk(w, slice_rows(pending_, next_row_, pending_.rows));
  return w.finish();
}

void PipeHandle::restore_state(std::string bytes) {
  StateReader r(std::move(bytes), "pipe_restore_state");
  if (r.version() != kHandleStateVersion) throw r.error(fmt::format("state version {} is not supported", r.version()));
  std::string run_state = r.read_string();
  Chunk pending;
  const bool has_pending = r.read_u32() != 0;
  if (has_pending) pending = restore_chunk(r);
  r.expect_end();
  if (has_pending && pending.columns.size() != fields_.size())
    throw r.error("the saved rows do not match this pipeline's fields");
  run_->restore_state(std::move(run_state), "pipe_restore_state");
  pending_ = std::move(pending);
  next_row_ = 0;
}

}  // namespace pipec
