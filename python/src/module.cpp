// The extension module pipec._pipec: the compiler and runtime behind `import pipec`. The public API,
// its docstrings and argument checks are in python/pipec/__init__.py; this module stays small.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/src/py_errors.h"
#include "python/src/py_run.h"
#include "python/src/py_spec.h"
#include "python/src/py_tensor.h"
#include "runtime/capi/dlpack_export.h"

namespace nb = nanobind;
using namespace pipec;
using namespace pipec::python;

namespace {

DevicePolicy device_policy(const std::string& word) {
  if (word == "auto") return DevicePolicy::Auto;
  if (word == "cpu") return DevicePolicy::Cpu;
  if (word == "gpu") return DevicePolicy::Gpu;
  throw std::invalid_argument("device must be \"auto\", \"cpu\" or \"gpu\", not \"" + word + "\"");
}

// A compiled pipeline's plan, to start runs from.
struct PyCompiled {
  std::shared_ptr<const CompiledPlan> plan;
};

}  // namespace

NB_MODULE(_pipec, m) {
  m.doc() = "pipec's compiler and runtime (use the pipec package, not this module)";
  register_error_translator();
  bind_tensor(m);
  bind_run(m);

  nb::class_<PyCompiled>(m, "Compiled")
      .def_prop_ro("name", [](const PyCompiled& c) { return c.plan->name; })
      .def_prop_ro("kernels", [](const PyCompiled& c) { return c.plan->kernels; })
      .def("explain", [](const PyCompiled& c) { return print_plan(c.plan->library.plan); })
      .def(
          "start",
          [](const PyCompiled& c, int threads, uint64_t seed, int64_t shard_index, int64_t shard_count,
             const std::string& device, const std::string& data_dir) {
            RunArgs a;
            a.threads = threads;
            a.seed = seed;
            a.shard_index = shard_index;
            a.shard_count = shard_count;
            a.device = device_policy(device);
            a.data_dir = data_dir;
            return new PyRun(c.plan, a);
          },
          nb::arg("threads"), nb::arg("seed"), nb::arg("shard_index"), nb::arg("shard_count"), nb::arg("device"),
          nb::arg("data_dir"), nb::rv_policy::take_ownership);

  nb::class_<PySpec>(m, "Spec")
      .def(
          "__init__",
          [](PySpec* self, const std::string& path, const std::vector<std::pair<std::string, std::string>>& defines,
             const std::vector<std::string>& import_dirs, int opt_level, bool jit) {
            CompileArgs a;
            a.path = path;
            a.defines = defines;
            a.import_dirs = import_dirs;
            a.opt_level = opt_level;
            a.jit = jit;
            nb::gil_scoped_release release;
            new (self) PySpec(std::move(a));
          },
          nb::arg("path"), nb::arg("defines"), nb::arg("import_dirs"), nb::arg("opt_level"), nb::arg("jit"))
      .def_prop_ro("path", &PySpec::path)
      .def_prop_ro("spec_dir", &PySpec::spec_dir)
      .def_prop_ro("pipelines", &PySpec::pipelines)
      .def_prop_ro("warnings",
                   [](const PySpec& s) {
                     nb::list out;
                     for (const DiagnosticInfo& d : s.warnings()) out.append(to_python(d));
                     return out;
                   })
      .def(
          "compile_pipeline",
          [](PySpec& s, const std::string& name, const std::string& device) {
            DevicePolicy policy = device_policy(device);
            std::shared_ptr<const CompiledPlan> plan;
            {
              nb::gil_scoped_release release;  // the JIT takes a while
              plan = s.compile_pipeline(name, policy);
            }
            return PyCompiled{plan};
          },
          nb::arg("name"), nb::arg("device"));

  m.def("live_tensors", &live_exported_tensors, "Tensors handed out and not yet released (for leak checks).");
}
