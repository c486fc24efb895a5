#include "python/src/py_run.h"

#include <pythread.h>

#include <stdexcept>

#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/src/py_tensor.h"
#include "python/src/sigint_wait.h"
#include "runtime/capi/dlpack_export.h"
#include "runtime/core/buffer_pool.h"

namespace nb = nanobind;

namespace pipec::python {

namespace {

// Whether Ctrl-C should interrupt a wait on this thread: Python raises KeyboardInterrupt only on its
// main thread, and only with its default handler (a program with a handler of its own decides itself).
bool sigint_raises_here() {
  static unsigned long main_thread =
      nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  if (PyThread_get_thread_ident() != main_thread) return false;
  // Leaked on purpose: these live as long as the interpreter and must not be released after it.
  static PyObject* getsignal = nb::object(nb::module_::import_("signal").attr("getsignal")).release().ptr();
  static PyObject* default_handler =
      nb::object(nb::module_::import_("signal").attr("default_int_handler")).release().ptr();
  static PyObject* sigint = nb::object(nb::module_::import_("signal").attr("SIGINT")).release().ptr();
  nb::object current = nb::borrow(getsignal)(nb::handle(sigint));
  return current.ptr() == default_handler;
}

void release_all(std::vector<DLManagedTensor*>& tensors) {
  for (DLManagedTensor*& t : tensors)
    if (t) {
      t->deleter(t);
      t = nullptr;
    }
}

nb::object dims(const std::vector<int64_t>& shape) {
  nb::list out;
  for (int64_t d : shape) out.append(d < 0 ? nb::none() : nb::object(nb::int_(d)));
  return nb::tuple(out);
}

}  // namespace

PyRun::PyRun(std::shared_ptr<const CompiledPlan> plan, const RunArgs& a) : plan_(std::move(plan)) {
  pipe_options o;
  pipe_options_init(&o);
  o.threads = a.threads;
  o.seed = a.seed;
  o.shard_count = a.shard_count;
  o.shard_index = a.shard_index;
  o.data_dir = a.data_dir.empty() ? nullptr : a.data_dir.c_str();
  HostRunOptions host;
  host.cancel = &cancel_;
  host.device = a.device;
  {
    nb::gil_scoped_release release;  // finding the files can take a while
    handle_ = std::make_unique<PipeHandle>(plan_->library, o, host);
  }
  for (const Field& f : handle_->fields()) field_names_.push_back(nb::str(f.name.c_str()));
  batch_rank_ = handle_->run().plan().stages.back().element.batch_rank;
}

PyRun::~PyRun() {
  // Stopping the run joins its threads, which never need the GIL. (No wait can be in progress: a
  // waiting next() holds a reference to this object.)
  nb::gil_scoped_release release;
  handle_.reset();
}

const PipeHandle& PyRun::handle() const {
  if (!handle_) throw std::logic_error(closed_reason_);
  return *handle_;
}

nb::dict PyRun::next() {
  if (!handle_) throw nb::stop_iteration();
  if (busy_) throw std::runtime_error("a pipec.Pipeline was iterated by two threads at once; give each thread its own");
  std::vector<DLManagedTensor*> out(field_names_.size(), nullptr);
  if (!started_) {
    started_ = true;
    start_ = std::chrono::steady_clock::now();
  }
  bool got = false;
  if (handle_->has_pending_rows()) {
    got = handle_->next(out.data());  // no wait: the rows are there
  } else {
    std::exception_ptr error;
    bool interrupted = false;
    busy_ = true;
    {
      SigintScope scope(cancel_, sigint_raises_here());
      nb::gil_scoped_release release;
      try {
        got = handle_->next(out.data());
      } catch (...) {
        error = std::current_exception();
      }
      interrupted = scope.fired() || cancel_.cancelled();
    }
    busy_ = false;
    if (close_requested_) {  // close() from another thread while this one waited
      release_all(out);
      stop("the pipeline is closed");
      throw nb::stop_iteration();
    }
    if (interrupted || error) {
      // A run that failed or was cancelled cannot go on: stop it (its threads end quickly now).
      release_all(out);
      stop(interrupted ? "the pipeline was interrupted" : "the pipeline stopped at an error");
      if (interrupted) {
        if (PyErr_CheckSignals() != 0) throw nb::python_error();  // Python's KeyboardInterrupt
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw nb::python_error();
      }
      std::rethrow_exception(error);
    }
  }
  if (!got) throw nb::stop_iteration();

  nb::dict batch;
  for (size_t k = 0; k < out.size(); ++k) {
    const DLTensor& t = out[k]->dl_tensor;
    if (k == 0) examples_ += batch_rank_ > 0 && t.ndim > 0 ? t.shape[0] : 1;
    int64_t n = 1;
    for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
    bytes_ += n * ((t.dtype.bits + 7) / 8);
    DLManagedTensor* owned = out[k];
    out[k] = nullptr;
    batch[field_names_[k]] = nb::cast(PyTensor(owned), nb::rv_policy::move);
  }
  ++elements_;
  last_ = std::chrono::steady_clock::now();
  return batch;
}

nb::bytes PyRun::state() {
  if (!handle_) throw nb::value_error(closed_reason_.c_str());
  std::string s;
  {
    nb::gil_scoped_release release;
    s = handle_->save_state();
  }
  return nb::bytes(s.data(), s.size());
}

void PyRun::restore(nb::bytes state) {
  if (!handle_) throw nb::value_error(closed_reason_.c_str());
  std::string s(static_cast<const char*>(state.data()), state.size());
  nb::gil_scoped_release release;
  handle_->restore_state(std::move(s));
}

void PyRun::close() {
  if (!handle_) return;
  if (busy_) {
    // Another thread waits in next(): end its wait; it stops the run when it wakes.
    close_requested_ = true;
    cancel_.cancel();
    return;
  }
  stop("the pipeline is closed");
}

void PyRun::stop(std::string reason) {
  if (!handle_) return;
  final_stats_ = stats();
  closed_reason_ = std::move(reason);
  nb::gil_scoped_release release;
  handle_.reset();
}

nb::dict PyRun::element_spec() const {
  nb::dict out;
  const std::vector<Field>& fields = handle_ ? handle_->fields() : plan_->library.plan.stages.back().element.fields;
  for (const Field& f : fields) {
    std::optional<DLDataType> dt = dlpack_dtype(f.type->dtype);
    out[f.name.c_str()] = nb::make_tuple(dt ? numpy_dtype_name(*dt) : std::string("bytes"), dims(f.type->shape));
  }
  return out;
}

nb::dict PyRun::stats() const {
  if (!handle_ && final_stats_.is_valid()) return nb::cast<nb::dict>(final_stats_);
  const PipelineRun& run = handle().run();
  const RunContext& ctx = run.context();
  const Plan& plan = run.plan();
  // From the first request to the last element handed out, as pipec run's summary.
  double seconds = elements_ > 0 ? std::chrono::duration<double>(last_ - start_).count() : 0.0;
  nb::dict s;
  s["pipeline"] = plan_->name;
  s["elements"] = elements_;
  s["examples"] = examples_;
  s["bytes"] = bytes_;
  s["seconds"] = seconds;
  s["examples_per_second"] = seconds > 0 ? examples_ / seconds : 0.0;
  s["kernels"] = plan_->kernels;
  s["peak_rss_bytes"] = peak_rss_bytes();
  BufferPoolStats pool = BufferPool::global().stats();
  nb::dict buffers;
  buffers["fresh_count"] = pool.fresh_count;
  buffers["fresh_bytes"] = pool.fresh_bytes;
  buffers["reused_count"] = pool.reused_count;
  buffers["reused_bytes"] = pool.reused_bytes;
  s["buffer_pool"] = buffers;
  nb::list stages;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& st = plan.stages[i];
    StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    nb::dict d;
    d["index"] = i;
    d["op"] = std::string(stage_name(st.kind));
    d["elements_out"] = snap.elements_out;
    d["busy_seconds"] = snap.busy_ns / 1e9;
    d["bytes_out"] = snap.bytes;
    d["dropped"] = ctx.dropped[i]->load();
    d["backend"] = !has_element_kernel(st)      ? std::string()
                   : st.native && st.native->fn ? st.native->backend
                                                : std::string("interpreter");
    d["device"] = ctx.stage_device.at(i);
    stages.append(d);
  }
  s["stages"] = stages;
  s["warnings"] = nb::cast(warnings());
  return s;
}

std::vector<std::string> PyRun::warnings() const {
  if (!handle_) return {};
  return handle_->run().context().warnings();  // e.g. to(gpu) without a GPU: the stages after it run on the CPU
}

void bind_run(nb::module_& m) {
  nb::class_<PyRun>(m, "Run", "One run of a compiled pipeline (pipec.Pipeline wraps it).")
      .def("next", &PyRun::next)
      .def("state", &PyRun::state)
      .def("restore", &PyRun::restore, nb::arg("state"))
      .def("close", &PyRun::close)
      .def_prop_ro("closed", &PyRun::closed)
      .def_prop_ro("name", &PyRun::name)
      .def("element_spec", &PyRun::element_spec)
      .def("stats", &PyRun::stats)
      .def("warnings", &PyRun::warnings);
}

}  // namespace pipec::python
