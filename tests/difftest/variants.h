// The ways of running one spec that must agree ("variants"), and how to run each.
//
// In-process variants compile the spec through the same call as `pipec run` (compile(), at -O0: the
// plan as lowered) and run it with PipelineRun, with a chosen thread count and chunk size;
// they run the reference interpreter and must agree bit for bit. Command-line variants run the real
// `pipec run --output DIR` with flags (the default, -O0, --no-jit, ...) and read the .npy files back;
// one is enabled only when `pipec run --help` lists its flag, so the harness works before and after
// the optimizer and the JIT land, and says which variants ran.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/difftest/compare_outputs.h"

namespace pipec::difftest {

struct Variant {
  std::string name;
  bool in_process = true;
  int threads = 1;
  int64_t chunk_rows = 0;          // in-process: rows per source chunk (0 = the runtime's default)
  std::vector<std::string> flags;  // command line: extra `pipec run` flags
  Tolerance tolerance = Tolerance::Exact;
  bool built_library = false;  // `pipec build` the spec, read the library with difftest_read_lib
  int every = 1;               // run on every n-th case only (for slow variants)
};

struct RunRequest {
  std::filesystem::path spec;
  std::string pipeline;           // empty: the only pipeline of the spec
  std::optional<int64_t> take;    // stop after this many output elements
  std::filesystem::path scratch;  // a folder the command-line variants may write into
};

/// The reference: the interpreter on one thread with the default chunk size.
Variant reference_variant();

/// Every other variant, and for each variant that is not enabled a line saying why.
struct VariantSet {
  std::vector<Variant> enabled;
  std::vector<std::string> skipped;  // "pipec-run-O0: `pipec run --help` lists no -O0"
};
/// `lib_reader`: the difftest_read_lib program; `lib_every`: how often the built-library variant runs.
VariantSet detect_variants(const std::string& pipec_binary, const std::string& lib_reader, int lib_every);

/// Runs `req` as `v` describes. Never throws: a failure is reported in RunOutput::error.
RunOutput run_variant(const Variant& v, const RunRequest& req, const std::string& pipec_binary,
                      const std::string& lib_reader = "");

/// Runs `pipec ARGS` with stdout and stderr captured into files under `scratch`; returns the exit
/// code and fills `out` / `err` when given.
int run_command(const std::string& pipec_binary, const std::vector<std::string>& args,
                const std::filesystem::path& scratch, std::string* out = nullptr, std::string* err = nullptr);

}  // namespace pipec::difftest
