#include "compiler/codegen/llvm/host_compiler.h"

#include <mutex>
#include <stdexcept>

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

namespace pipec::codegen {

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> host_target_machine() {
  init_llvm();
  std::string triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw std::runtime_error("LLVM has no target for " + triple + ": " + err);
  llvm::StringMap<bool> host_features;
  std::string features;
  if (llvm::sys::getHostCPUFeatures(host_features))
    for (const auto& f : host_features) features += std::string(f.second ? "+" : "-") + f.first().str() + ",";
  if (!features.empty()) features.pop_back();
  llvm::TargetOptions opts;  // strict IEEE: no fast-math, no FMA contraction (results match the interpreter)
  opts.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(triple, llvm::sys::getHostCPUName(), features,
                                                                      opts, llvm::Reloc::PIC_, llvm::None,
                                                                      llvm::CodeGenOpt::Aggressive));
  if (!tm) throw std::runtime_error("LLVM could not create a target machine for " + triple);
  return tm;
}

std::string target_description(const llvm::TargetMachine& tm) {
  return tm.getTargetTriple().str() + " " + tm.getTargetCPU().str() + " " + tm.getTargetFeatureString().str();
}

std::string compile_to_object(llvm::Module& m, llvm::TargetMachine& tm) {
  m.setTargetTriple(tm.getTargetTriple().str());
  m.setDataLayout(tm.createDataLayout());
  std::string problems;
  llvm::raw_string_ostream ps(problems);
  if (llvm::verifyModule(m, &ps)) throw std::runtime_error("internal: the emitted kernel does not verify: " + ps.str());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
  // An optimizer bug must not reach instruction selection, which aborts the process on invalid IR: the
  // caller reports the error and the function stays on the interpreter.
  if (llvm::verifyModule(m, &ps))
    throw std::runtime_error("internal: LLVM's optimizer made a kernel that does not verify: " + ps.str());

  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager cg;
  if (tm.addPassesToEmitFile(cg, os, nullptr, llvm::CGFT_ObjectFile))
    throw std::runtime_error("LLVM cannot emit object files for " + tm.getTargetTriple().str());
  cg.run(m);
  return std::string(buf.data(), buf.size());
}

}  // namespace pipec::codegen
