#include "python/src/py_errors.h"

#include <nanobind/stl/string.h>

#include "runtime/exec/checkpoint_io.h"
#include "runtime/exec/iterator.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/errors.h"
#include "runtime/threads/cancellation.h"

namespace nb = nanobind;

namespace pipec::python {

namespace {

nb::object error_class(const char* name) { return nb::module_::import_("pipec.errors").attr(name); }

void raise(nb::object cls, nb::object instance) { PyErr_SetObject(cls.ptr(), instance.ptr()); }

nb::object optional_int(int64_t v) { return v >= 0 ? nb::object(nb::int_(v)) : nb::none(); }
nb::object optional_str(const std::string& s) { return s.empty() ? nb::none() : nb::object(nb::str(s.c_str())); }

void raise_data_error(const std::string& message, const std::string& stage, const std::string& spec_location,
                      const DataLocation* where) {
  nb::object cls = error_class("DataError");
  nb::object e =
      cls(message, nb::arg("stage") = optional_str(stage), nb::arg("spec_location") = optional_str(spec_location),
          nb::arg("file") = where ? optional_str(where->file) : nb::none(),
          nb::arg("record") = where ? optional_int(where->record) : nb::none(),
          nb::arg("offset") = where ? optional_int(where->offset) : nb::none());
  raise(cls, e);
}

}  // namespace

nb::object to_python(const DiagnosticInfo& d) {
  return error_class("Diagnostic")(d.file, d.line, d.column, d.severity, d.kind, d.message, d.rendered);
}

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const SpecCompileError& e) {
      nb::list diags;
      for (const DiagnosticInfo& d : e.diagnostics()) diags.append(to_python(d));
      nb::object cls = error_class("SpecError");
      raise(cls, cls(e.what(), diags));
    } catch (const StageError& e) {
      const std::optional<DataLocation>& where = e.data_location();
      raise_data_error(e.what(), e.stage_op(), e.spec_location(), where ? &*where : nullptr);
    } catch (const DataError& e) {
      raise_data_error(e.what(), "", "", &e.location());
    } catch (const CheckpointError& e) {
      nb::object cls = error_class("StateError");
      raise(cls, cls(e.what()));
    } catch (const GpuUnavailableError& e) {
      nb::object cls = error_class("GpuUnavailableError");
      raise(cls, cls(e.what()));
    } catch (const CancelledError&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });
}

}  // namespace pipec::python
