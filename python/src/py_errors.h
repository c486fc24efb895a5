// C++ exceptions turned into the pipec.* Python exceptions (python/pipec/errors.py), with their parts
// as attributes: SpecError's diagnostics, DataError's stage, file and offset.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

namespace pipec::python {

/// One diagnostic of a spec, as pipec.Diagnostic shows it.
struct DiagnosticInfo {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string severity;  // "error", "warning", "note"
  std::string kind;      // diagnostic_kinds.def's name
  std::string message;
  std::string rendered;  // the clang-like text with the source line and a caret
};

/// The spec has errors: raised as pipec.SpecError.
class SpecCompileError : public std::runtime_error {
 public:
  SpecCompileError(std::string message, std::vector<DiagnosticInfo> diagnostics)
      : std::runtime_error(std::move(message)), diagnostics_(std::move(diagnostics)) {}
  const std::vector<DiagnosticInfo>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<DiagnosticInfo> diagnostics_;
};

/// A pipec.Diagnostic for `d`.
nanobind::object to_python(const DiagnosticInfo& d);

/// Registers the translator of runtime and compiler exceptions (SpecCompileError, StageError,
/// DataError, CheckpointError, GpuUnavailableError, CancelledError).
void register_error_translator();

}  // namespace pipec::python
