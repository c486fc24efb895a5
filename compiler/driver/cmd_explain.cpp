// `pipec explain FILE [--pipeline NAME | --train NAME]`: the plan of each pipeline, stage by stage with
// element types, and the expression IR of every map and filter. The optimized plan by default, the
// lowered one with -O0, and with --passes the plan after every optimizer pass. Then the training-step
// graph of each train block (with --train, of that one, after the plan of its data). With --workers N
// [--worker I], the plan worker I of N runs under multi_worker (runtime/exec/auto_shard.h), after a line
// saying how it was sharded.
#include <filesystem>
#include <iostream>
#include <map>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/stage_kernel.h"
#include "compiler/compile/compile.h"
#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/compile_report.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/spec_options.h"

namespace pipec {

namespace {

// Which bodies of the (optimized) plan `pipec run` compiles to native kernels, and why the others not;
// a flat_map's inner pipeline's where the flat_map is, indented, its stages numbered `#flat_map.stage`.
std::string kernel_lines(const Plan& plan, bool loops, const std::vector<int>& within = {}) {
  std::string out;
  std::string prefix, indent = "  ";
  for (int f : within) {
    prefix += std::to_string(f) + ".";
    indent += "  ";
  }
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    if (s.inner) {
      std::vector<int> deeper = within;
      deeper.push_back(static_cast<int>(i));
      out += kernel_lines(*s.inner, loops, deeper);
    }
    if (!has_element_kernel(s)) continue;
    codegen::LoopNest nest;
    std::string why;
    const std::string head = indent + "#" + prefix + std::to_string(i) + " " + std::string(stage_name(s.kind));
    if (codegen::stage_loop_nest(plan, static_cast<int>(i), nest, why)) {
      out += head + ": compiled (" + codegen::kernel_symbol(within, static_cast<int>(i)) + ")\n";
      if (loops) out += codegen::print_loop_nest(nest);
    } else {
      out += head + ": interpreter: " + why + "\n";
    }
  }
  return out;
}

}  // namespace

int cmd_explain(const Args& args) {
  SpecFlags flags;
  CompileRequest request;
  bool show_passes = false, loops = false, llvm_ir = false;
  int64_t workers = 1, worker = 0;
  auto app = make_command(
      "explain", "FILE",
      "Type-checks FILE and prints the optimized plan of each pipeline: every stage with its arguments and\n"
      "the element type it produces, then the expression IR of every map and filter, and whether `pipec run`\n"
      "compiles each map/filter to native code (and if not, why); then, for each train block, the training-step\n"
      "graph: inputs, parameters (Keras names, shapes, initializers), the forward, loss, backward and update\n"
      "nodes with their FLOPs per example.");
  app->add_option("FILE", request.path, "the spec")->required();
  auto* pipeline = app->add_option("--pipeline", request.pipeline, "only this pipeline")->type_name("NAME");
  app->add_option("--train", request.train.block, "only this train block: the plan of its data, then its step graph")
      ->type_name("NAME")
      ->excludes(pipeline);
  app->add_flag("--passes", show_passes,
                "the lowered plan, then the plan after each optimizer pass (or \"unchanged\")");
  auto* workers_option =
      app->add_option("--workers", workers, "the plan one worker of N runs under multi_worker: sharded, its batch / N")
          ->type_name("N")
          ->check(CLI::PositiveNumber);
  app->add_option("--worker", worker, "with --workers: which worker's plan, from 0 (default 0)")
      ->type_name("I")
      ->check(CLI::NonNegativeNumber)
      ->needs(workers_option);
  app->add_flag("--loops", loops, "also print the loop nests the code generators compile");
  app->add_flag("--llvm", llvm_ir, "also print the (unoptimized) LLVM IR of the kernels");
  add_spec_flags(*app, flags, "print diagnostics only when there are errors");
  add_opt_flags(*app, request.options.passes);
  if (auto code = parse_command_line(*app, args)) return *code;

  request.target = !request.pipeline.empty()      ? CompileTarget::OnePipeline
                   : !request.train.block.empty() ? CompileTarget::Train
                                                  : CompileTarget::EveryPipeline;
  request.options.check = flags.check_options();
  if (worker >= workers) {
    std::cerr << "pipec explain: --worker " << worker << " is not one of the " << workers << " workers (0 to "
              << workers - 1 << ")\n";
    return 2;
  }
  if (workers_option->count() > 0) request.options.shard = CompileOptions::WorkerShard{workers, worker};
  // As a run compiles it: one_hot_colors' class_dict.csv read from the spec's folder.
  request.options.data_dir = std::filesystem::absolute(std::filesystem::path(request.path)).parent_path().string();
  // Each pipeline's output is collected while it compiles and printed in order afterwards.
  std::map<const Decl*, std::string> shown;
  const Decl* current = nullptr;
  if (show_passes) {
    request.options.on_lowered = [&](const Decl& d, const Plan& lowered) {
      current = &d;
      shown[current] = "== lowered ==\n" + print_plan(lowered);
    };
    request.options.passes.log = [&](const std::string& pass, bool changed, const Plan& after) {
      std::string& out = shown[current];
      if (changed) out += "\n== after " + pass + " ==\n" + print_plan(after);
      else out += "\n== after " + pass + ": unchanged ==\n";
    };
  }
  CompileResult result = compile(request);
  if (auto code = report_compile(result, "explain", flags, !flags.quiet || result.status == CompileStatus::SpecErrors))
    return *code;
  bool first = true;
  for (const CompiledPipeline& p : result.pipelines) {
    if (!first) std::cout << "\n";
    first = false;
    if (p.shard)
      std::cout << "sharding (worker " << worker << " of " << workers << "): " << p.shard->description << "\n";
    std::cout << (show_passes ? shown[p.decl] : print_plan(p.plan));
    if (request.options.passes.opt_level > 0)
      if (std::string kernels = kernel_lines(p.plan, loops); !kernels.empty()) std::cout << "kernels:\n" << kernels;
    if (llvm_ir) std::cout << codegen::kernels_llvm_ir(p.plan);
  }
  // Train blocks: the training-step graph (model, loss, gradients, optimizer) of each.
  for (const CompiledTrain& t : result.trains) {
    if (!first) std::cout << "\n";
    first = false;
    std::cout << print_train_program(t.program);
  }
  return 0;
}

}  // namespace pipec
