#include "compiler/driver/compile_report.h"

#include <iostream>

namespace pipec {

std::optional<int> report_compile(const CompileResult& result, const std::string& command, const SpecFlags& flags,
                                  bool print_diagnostics) {
  if (result.status == CompileStatus::Unreadable) {
    std::cerr << "pipec " << command << ": " << result.error << "\n";
    return 2;
  }
  if (print_diagnostics) result.program->diags.print(std::cerr, flags.color_output());
  switch (result.status) {
    case CompileStatus::Ok: return std::nullopt;
    case CompileStatus::SpecErrors: return 1;
    case CompileStatus::ShardError: std::cerr << result.error << "\n"; return 1;  // already "spec.pipe:L:C: error: ..."
    default: break;
  }
  std::string error = result.error;
  if (!error.empty() && error.back() == '\n') error.pop_back();
  std::cerr << "pipec " << command << ": " << error << "\n";
  return 2;
}

}  // namespace pipec
