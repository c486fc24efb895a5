#include "compiler/codegen/llvm/jit.h"

#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/emit_kernel.h"
#include "compiler/codegen/llvm/host_compiler.h"
#include "compiler/codegen/llvm/kernel_cache.h"
#include "compiler/codegen/stage_kernel.h"

namespace pipec::codegen {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string module_ir(llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}

// True when `object` parses as an object file defining `symbol`: a cached file that passed its
// checksum but was written for something else must not reach the linker.
bool object_defines(const std::string& object, const std::string& symbol) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(object, "kernel", false);
  auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  for (const auto& sym : (*obj)->symbols()) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name == symbol) return true;
  }
  return false;
}

std::string error_text(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

std::string JitReport::summary() const {
  auto plural = [](int n) { return n == 1 ? "kernel" : "kernels"; };
  std::string s;
  if (compiled) s = fmt::format("compiled {} {} in {:.0f} ms", compiled, plural(compiled), compile_ms);
  if (cached) s += fmt::format("{}{} {} from cache", s.empty() ? "" : ", ", cached, plural(cached));
  if (s.empty()) {
    s = "no kernels";
    for (const StageJitStatus& st : stages)
      if (!st.native) {
        s += fmt::format(" (stage {}: {})", st.stage, st.why_not);
        break;
      }
  }
  return s;
}

JitReport attach_native_kernels(Plan& plan, const JitOptions& opts) {
  const auto start = Clock::now();
  JitReport report;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::shared_ptr<llvm::orc::LLJIT> jit;
  std::string setup_error;
  const std::string dir = opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir;
  struct Pending {
    size_t status;
    LoopNest nest;
  };
  std::vector<Pending> ready;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    if (!has_element_kernel(s)) continue;
    StageJitStatus st;
    st.stage = static_cast<int>(i);
    const auto t0 = Clock::now();
    LoopNest nest;
    if (!stage_loop_nest(plan, st.stage, nest, st.why_not)) {
      report.stages.push_back(st);
      continue;
    }
    try {
      if (!tm) tm = host_target_machine();
      if (!jit) {
        auto j = llvm::orc::LLJITBuilder().create();
        if (!j) throw std::runtime_error("LLJIT: " + error_text(j.takeError()));
        jit = std::shared_ptr<llvm::orc::LLJIT>(std::move(*j));
        llvm::orc::SymbolMap syms;
        for (const auto& [name, addr] : kernel_runtime_symbols())
          syms[jit->mangleAndIntern(name)] =
              llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
        if (auto e = jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))))
          throw std::runtime_error("LLJIT: " + error_text(std::move(e)));
      }
      const std::string symbol = kernel_symbol(st.stage);
      llvm::LLVMContext ctx;
      auto m = std::make_unique<llvm::Module>(symbol, ctx);
      emit_kernel(nest, *m, symbol);
      const std::string key = kernel_cache_key(module_ir(*m), target_description(*tm));
      std::optional<std::string> object;
      if (opts.use_cache) {
        object = cache_load(dir, key);
        if (object && !object_defines(*object, symbol)) object.reset();
      }
      if (object) {
        st.from_cache = true;
      } else {
        const auto c0 = Clock::now();
        object = compile_to_object(*m, *tm);
        st.compile_ms = ms_since(c0);
        if (opts.use_cache) cache_store(dir, key, *object);
      }
      if (auto e = jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(*object, symbol)))
        throw std::runtime_error("LLJIT: " + error_text(std::move(e)));
      auto addr = jit->lookup(symbol);
      if (!addr) throw std::runtime_error("LLJIT: " + error_text(addr.takeError()));
      auto k = std::make_shared<NativeKernel>();
      k->fn = reinterpret_cast<PipecKernelFn>(static_cast<uintptr_t>(addr->getAddress()));
      k->symbol = symbol;
      k->input_fields = kernel_input_fields(nest);
      k->backend = "llvm-jit";
      k->compile_ms = st.from_cache ? 0 : ms_since(t0);
      k->keep_alive = jit;
      plan.stages[i].native = k;
      st.native = true;
      (st.from_cache ? report.cached : report.compiled)++;
    } catch (const std::exception& e) {
      st.why_not = e.what();
    }
    report.stages.push_back(st);
  }
  report.compile_ms = ms_since(start);
  return report;
}

std::string kernels_llvm_ir(const Plan& plan) {
  std::string out;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    LoopNest nest;
    std::string why;
    if (!stage_loop_nest(plan, static_cast<int>(i), nest, why)) continue;
    llvm::LLVMContext ctx;
    const std::string symbol = kernel_symbol(static_cast<int>(i));
    llvm::Module m(symbol, ctx);
    emit_kernel(nest, m, symbol);
    out += module_ir(m);
  }
  return out;
}

}  // namespace pipec::codegen
