#include "compiler/codegen/llvm/aot.h"

#include <fstream>
#include <memory>
#include <stdexcept>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/emit_kernel.h"
#include "compiler/codegen/llvm/host_compiler.h"
#include "compiler/codegen/stage_kernel.h"

namespace pipec::codegen {

namespace {

// The kernels of `plan` (the inner pipeline of the flat_maps `within`) emitted into `m`; each flat_map
// gets a copy of its inner plan with its stages' native set.
int emit_plan_kernels(Plan& plan, std::vector<int>& within, llvm::Module& m) {
  int count = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (plan.stages[i].inner) {
      Plan inner = *plan.stages[i].inner;
      within.push_back(static_cast<int>(i));
      count += emit_plan_kernels(inner, within, m);
      within.pop_back();
      plan.stages[i].inner = std::make_shared<const Plan>(std::move(inner));
    }
    LoopNest nest;
    std::string why;
    if (!stage_loop_nest(plan, static_cast<int>(i), nest, why)) continue;
    const std::string symbol = kernel_symbol(within, static_cast<int>(i));
    emit_kernel(nest, m, symbol);
    auto k = std::make_shared<NativeKernel>();
    k->symbol = symbol;
    k->input_fields = kernel_input_fields(nest);
    k->backend = "aot";
    plan.stages[i].native = std::move(k);
    ++count;
  }
  return count;
}

}  // namespace

int emit_kernels_object(Plan& plan, const std::string& object_path) {
  llvm::LLVMContext ctx;
  llvm::Module m("pipec_kernels", ctx);
  // Kernels go on a copy, which replaces the plan once the object file is written.
  Plan with_kernels = plan;
  std::vector<int> within;
  const int count = emit_plan_kernels(with_kernels, within, m);
  auto tm = host_target_machine();
  const std::string object = compile_to_object(m, *tm);
  {
    std::ofstream f(object_path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + object_path);
    f.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!f.good()) throw std::runtime_error("cannot write " + object_path);
  }
  plan = std::move(with_kernels);
  return count;
}

}  // namespace pipec::codegen
