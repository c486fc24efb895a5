#include "python/src/py_spec.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/compile/compile.h"

namespace pipec::python {

namespace fs = std::filesystem;

namespace {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

std::vector<DiagnosticInfo> diagnostics_of(const Program& program, bool errors_only) {
  std::vector<DiagnosticInfo> out;
  const Diagnostics& diags = program.diags;
  for (const Diagnostic& d : diags.all()) {
    if (errors_only != (d.severity == Severity::Error)) continue;
    DiagnosticInfo info;
    if (d.range.valid()) {
      const SourceFile& f = diags.sources().file(d.range.file);
      LineCol lc = f.line_col(d.range.begin);
      info.file = f.path();
      info.line = lc.line;
      info.column = lc.col;
    }
    info.severity = severity_name(d.severity);
    info.kind = std::string(diag_kind_info(d.kind).name);
    info.message = d.message;
    info.rendered = diags.render(d, false);
    out.push_back(std::move(info));
  }
  return out;
}

CompileOptions compile_options(const CompileArgs& a) {
  CompileOptions o;
  o.check.import_paths = a.import_dirs;
  for (const auto& [name, value] : a.defines) o.check.const_overrides.push_back({name, value});
  o.passes.opt_level = a.opt_level;
  o.cpu_kernels = a.jit ? CpuKernels::Jit : CpuKernels::None;
  return o;
}

[[noreturn]] void throw_spec_errors(const Program& program) {
  std::vector<DiagnosticInfo> errors = diagnostics_of(program, true);
  std::string message;
  for (const DiagnosticInfo& d : errors) message += d.rendered;
  if (!message.empty() && message.back() == '\n') message.pop_back();
  throw SpecCompileError(message, std::move(errors));
}

}  // namespace

PySpec::PySpec(CompileArgs args) : args_(std::move(args)) {
  spec_dir_ = fs::absolute(fs::path(args_.path)).parent_path().lexically_normal().string();
  CompileRequest request;
  request.path = args_.path;
  request.target = CompileTarget::CheckOnly;
  request.options = compile_options(args_);
  CompileResult r = compile(request);
  if (r.status == CompileStatus::Unreadable)
    throw std::runtime_error(fmt::format("cannot read {}: {}", args_.path, r.error));
  if (r.status == CompileStatus::SpecErrors) throw_spec_errors(*r.program);
  if (!r.ok()) throw std::runtime_error(r.error);
  warnings_ = diagnostics_of(*r.program, false);
  for (const auto& d : r.program->main().decls)
    if (d->kind == DeclKind::Pipeline) pipelines_.push_back(d->name);
}

std::shared_ptr<const CompiledPlan> PySpec::compile_pipeline(const std::string& name, DevicePolicy device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(name, static_cast<int>(device));
  if (auto it = compiled_.find(key); it != compiled_.end()) return it->second;

  CompileRequest request;
  request.path = args_.path;
  request.target = CompileTarget::OnePipeline;
  request.pipeline = name;
  request.options = compile_options(args_);
  request.options.device = device;
  CompileResult r = compile(request);
  // The spec may have changed on disk since it was checked: report it the same way.
  if (r.status == CompileStatus::SpecErrors) throw_spec_errors(*r.program);
  if (r.status == CompileStatus::NoPipeline) throw std::invalid_argument(r.error);
  if (!r.ok()) throw std::runtime_error(r.error);

  auto out = std::make_shared<CompiledPlan>();
  CompiledPipeline& p = r.pipelines.at(0);
  out->name = p.decl->name;
  out->library.plan = std::move(p.plan);
  out->library.spec_dir = spec_dir_;
  if (p.jit) out->kernels = p.jit->summary();
  // The JIT attached its kernels to the plan; a PipeHandle binds them again by symbol (as a built
  // library's are), so list them. The code stays alive through each kernel's keep_alive.
  for (Stage& s : out->library.plan.stages) {
    if (s.native && !s.native->fn) s.native.reset();  // nothing compiled: the interpreter runs it
    if (s.native) out->library.kernels.push_back({s.native->symbol.c_str(), s.native->fn});
  }
  compiled_[key] = out;
  return out;
}

}  // namespace pipec::python
