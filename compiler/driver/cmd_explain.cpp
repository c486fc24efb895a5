// `pipec explain FILE [--pipeline NAME]`: the plan of each pipeline, stage by stage with element types,
// and the expression IR of every map and filter. The optimized plan by default, the lowered one with
// -O0, and with --passes the plan after every optimizer pass.
#include <iostream>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/stage_kernel.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/spec_options.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"

namespace pipec {

static const char* kExplainUsage =
    "usage: pipec explain [options] FILE\n"
    "\n"
    "Type-checks FILE and prints the optimized plan of each pipeline: every stage with its arguments and\n"
    "the element type it produces, then the expression IR of every map and filter, and whether `pipec run`\n"
    "compiles each map/filter to native code (and if not, why).\n"
    "\n"
    "options:\n"
    "  --pipeline NAME        only this pipeline\n"
    "  --passes               the lowered plan, then the plan after each optimizer pass (or \"unchanged\")\n"
    "  --loops                also print the loop nests the code generators compile\n"
    "  --llvm                 also print the (unoptimized) LLVM IR of the kernels\n"
    "  -I DIR                 also search DIR for `import name`\n"
    "  -w, --no-warnings      do not report warnings\n";

int cmd_explain(const Args& args) {
  if (wants_help(args)) {
    std::cout << kExplainUsage << kOptFlagsHelp;
    return 0;
  }
  SpecOptions opts;
  std::vector<std::string> rest;
  std::vector<std::string> extra = opt_flag_names();
  extra.push_back("--pipeline");
  extra.push_back("--passes");
  extra.push_back("--loops");
  extra.push_back("--llvm");
  if (!parse_spec_options(args, opts, rest, "explain", extra)) return 2;
  PassOptions passes;
  if (!take_opt_flags(rest, passes, "explain")) return 2;
  bool show_passes = false;
  std::string only;
  std::vector<std::string> files;
  bool loops = false, llvm_ir = false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--loops") {
      loops = true;
    } else if (rest[i] == "--llvm") {
      llvm_ir = true;
    } else if (rest[i] == "--pipeline") {
      if (i + 1 >= rest.size()) {
        std::cerr << "pipec explain: --pipeline needs a name\n";
        return 2;
      }
      only = rest[++i];
    } else if (rest[i].rfind("--pipeline=", 0) == 0) {
      only = rest[i].substr(11);
    } else if (rest[i] == "--passes") {
      show_passes = true;
    } else {
      files.push_back(rest[i]);
    }
  }
  if (files.size() != 1) {
    std::cerr << "pipec explain: expected one spec file\n" << kExplainUsage;
    return 2;
  }
  auto program = check_file(files[0], opts.check);
  if (!program->io_error.empty()) {
    std::cerr << "pipec explain: " << program->io_error << "\n";
    return 2;
  }
  program->diags.print(std::cerr, opts.color);
  if (program->diags.has_errors()) return 1;
  bool found = false;
  bool first = true;
  for (const auto& d : program->main().decls) {
    if (d->kind != DeclKind::Pipeline || (!only.empty() && d->name != only)) continue;
    found = true;
    Plan plan = lower_pipeline(*program, *d);
    auto problems = verify_plan(plan);
    if (!problems.empty()) {
      std::cerr << "pipec explain: internal error: the plan of `" << d->name << "` does not verify:\n";
      for (auto& p : problems) std::cerr << "  " << p << "\n";
      return 2;
    }
    if (!first) std::cout << "\n";
    first = false;
    if (show_passes) {
      std::cout << "== lowered ==\n" << print_plan(plan);
      passes.log = [](const std::string& pass, bool changed, const Plan& after) {
        if (changed) std::cout << "\n== after " << pass << " ==\n" << print_plan(after);
        else std::cout << "\n== after " << pass << ": unchanged ==\n";
      };
    }
    try {
      run_passes(plan, passes);
    } catch (const PassError& e) {
      std::cerr << "pipec explain: " << e.what();
      return 2;
    }
    if (!show_passes) std::cout << print_plan(plan);
    // Code generation: which bodies of the (optimized) plan become native kernels.
    std::string kernels;
    for (size_t i = 0; i < plan.stages.size() && passes.opt_level > 0; ++i) {
      const Stage& s = plan.stages[i];
      if (!has_element_kernel(s)) continue;
      codegen::LoopNest nest;
      std::string why;
      if (codegen::stage_loop_nest(plan, static_cast<int>(i), nest, why)) {
        kernels += "  #" + std::to_string(i) + " " + std::string(stage_name(s.kind)) + ": compiled (" + codegen::kernel_symbol(static_cast<int>(i)) + ")\n";
        if (loops) kernels += codegen::print_loop_nest(nest);
      } else {
        kernels += "  #" + std::to_string(i) + " " + std::string(stage_name(s.kind)) + ": interpreter: " + why + "\n";
      }
    }
    if (!kernels.empty()) std::cout << "kernels:\n" << kernels;
    if (llvm_ir) std::cout << codegen::kernels_llvm_ir(plan);
  }
  if (!found) {
    if (!only.empty()) std::cerr << "pipec explain: no pipeline named `" << only << "` in " << files[0] << "\n";
    else std::cerr << "pipec explain: " << files[0] << " declares no pipeline\n";
    return 2;
  }
  return 0;
}

}  // namespace pipec
