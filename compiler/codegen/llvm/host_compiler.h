// LLVM module -> object code for this host (the JIT) or a named target (`pipec build`): the O3 pass
// pipeline of the new pass manager tuned for the target's CPU and features, then machine code
// generation into an in-memory relocatable object.
#pragma once

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace pipec::codegen {

/// The target machine for the host: its triple, CPU name and features (so the vectorizer uses e.g.
/// AVX2 where the host has it), position-independent code, aggressive code generation.
/// Throws std::runtime_error when LLVM has no target for the host.
std::unique_ptr<llvm::TargetMachine> host_target_machine();

/// "triple cpu features": what the machine code depends on besides the IR (part of the cache key).
std::string target_description(const llvm::TargetMachine& tm);

/// Optimizes `m` at O3 for `tm` and returns the relocatable object file's bytes.
std::string compile_to_object(llvm::Module& m, llvm::TargetMachine& tm);

}  // namespace pipec::codegen
