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

int emit_kernels_object(Plan& plan, const std::string& object_path) {
  llvm::LLVMContext ctx;
  llvm::Module m("pipec_kernels", ctx);
  std::vector<std::pair<size_t, std::shared_ptr<NativeKernel>>> made;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    LoopNest nest;
    std::string why;
    if (!stage_loop_nest(plan, static_cast<int>(i), nest, why)) continue;
    const std::string symbol = kernel_symbol(static_cast<int>(i));
    emit_kernel(nest, m, symbol);
    auto k = std::make_shared<NativeKernel>();
    k->symbol = symbol;
    k->input_fields = kernel_input_fields(nest);
    k->backend = "aot";
    made.emplace_back(i, std::move(k));
  }
  auto tm = host_target_machine();
  const std::string object = compile_to_object(m, *tm);
  {
    std::ofstream f(object_path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + object_path);
    f.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!f.good()) throw std::runtime_error("cannot write " + object_path);
  }
  for (auto& [i, k] : made) plan.stages[i].native = std::move(k);
  return static_cast<int>(made.size());
}

}  // namespace pipec::codegen
