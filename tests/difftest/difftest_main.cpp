// `difftest`: differential testing of pipec. For each seed, generates a random type-correct pipeline
// (tests/difftest/spec_generator.h), asserts that it checks, runs it in every variant
// (tests/difftest/variants.h) and compares every field of every element with the reference
// interpreter (tests/difftest/compare_outputs.h). Then does the same for the examples.
//
//   difftest [--seeds N] [--first S] [--seed S] [--keep DIR] [--pipec PATH] [--no-examples] [--examples-only]
//            [--source-dir DIR] [--spec FILE] [--known-bugs] [--lib-every K] [--lib-reader PATH] [-v]
//
// A mismatch prints the seed, the variant, element, field, first differing index and the spec, and
// keeps the case folder under --keep (default ./difftest-failures) for `difftest --seed S`.
#include <unistd.h>

#include <chrono>
#include <optional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "tests/difftest/self_check.h"
#include "tests/difftest/spec_generator.h"
#include "tests/difftest/variants.h"

namespace fs = std::filesystem;
using namespace pipec;
using namespace pipec::difftest;

namespace {

struct HarnessOptions {
  int64_t seeds = 200;
  uint64_t first = 1;
  std::optional<uint64_t> one_seed;
  fs::path keep = "difftest-failures";
  std::string pipec = PIPEC_BINARY;
  std::string lib_reader = DIFFTEST_LIB_READER;
  int lib_every = 10;  // the built-library variant links a library per case: every 10th case
  fs::path source_dir = PIPEC_SOURCE_DIR;
  bool examples = true;
  bool generated = true;
  bool verbose = false;
  bool known_bugs = false;  // --known-bugs: also generate patterns that hit known runtime bugs
  fs::path spec;  // --spec FILE: compare the variants on an existing spec instead
};

struct Tally {
  int64_t cases = 0;
  int64_t check_failures = 0;  // generated specs the checker refused (generator or compiler bugs)
  int64_t run_errors = 0;      // cases whose reference run failed (every variant must fail too)
  int64_t mismatches = 0;
  std::map<std::string, int64_t> compared;  // variant -> cases compared
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A short rendering of a small tensor for -v: dtype, shape and up to 16 values.
std::string tensor_text(const Tensor& t) {
  std::string s = fmt::format("{}[", dtype_name(t.dtype()));
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  s += "]";
  if (t.dtype() == DType::Bytes) return s;
  s += " =";
  int64_t n = std::min<int64_t>(t.num_elements(), 16);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = t.raw() + i * dtype_size(t.dtype());
    s += " " + scalar_text(t.dtype(), p);
  }
  if (t.num_elements() > n) s += " ...";
  return s;
}

void report_mismatch(const std::string& label, const Variant& v, const Mismatch& m, const fs::path& spec, const fs::path& kept) {
  std::cout << fmt::format("MISMATCH {} variant {} ({}): element {}, field `{}`, index {}: reference {}\n", label, v.name,
                           v.tolerance == Tolerance::Exact ? "exact" : "ulp bound", m.element, m.field, m.index, m.what);
  std::cout << "  spec kept in " << kept.string() << "\n";
  std::string text = read_all(spec);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) std::cout << "  | " << line << "\n";
}

// Runs every variant on one spec and compares it with the reference. Returns false on a mismatch.
bool compare_case(const std::string& label, const RunRequest& req, const VariantSet& variants, const HarnessOptions& o, Tally& t,
                  const fs::path& keep_as, bool every_variant = false) {
  RunOutput ref = run_variant(reference_variant(), req, o.pipec);
  int64_t case_index = t.cases;
  if (!ref.ok) {
    ++t.run_errors;
    if (o.verbose) std::cout << fmt::format("{}: the reference run failed: {}\n", label, ref.error);
  }
  bool ok = true;
  for (const Variant& v : variants.enabled) {
    // Slow variants run on every n-th generated case (the first included) and on every example.
    if (!every_variant && (case_index - 1) % v.every != 0) continue;
    RunOutput got = run_variant(v, req, o.pipec, o.lib_reader);
    ++t.compared[v.name];
    if (auto m = compare_outputs(ref, got, v.tolerance)) {
      ++t.mismatches;
      ok = false;
      std::error_code ec;
      fs::create_directories(keep_as.parent_path(), ec);
      fs::remove_all(keep_as, ec);
      fs::copy(req.spec.parent_path(), keep_as, fs::copy_options::recursive, ec);
      report_mismatch(label, v, *m, req.spec, keep_as);
    }
  }
  if (o.verbose && ref.ok) {
    std::cout << fmt::format("{}: {} elements{}\n", label, ref.elements.size(), ok ? " agree" : "");
    for (size_t e = 0; e < ref.elements.size() && e < 20; ++e)
      for (const auto& [name, tensor] : ref.elements[e]) std::cout << fmt::format("  #{} {}: {}\n", e, name, tensor_text(tensor));
  }
  return ok;
}

bool run_generated(uint64_t seed, const VariantSet& variants, const HarnessOptions& o, Tally& t, const fs::path& work) {
  ++t.cases;
  GeneratedCase c = generate_case(seed, o.known_bugs);
  fs::path dir = work / fmt::format("case-{}", seed);
  write_case(c, dir);
  fs::path spec = dir / "spec.pipe";
  // Every generated spec must pass the checker (the same call as `pipec check`).
  CompileRequest check;
  check.path = spec.string();
  check.target = CompileTarget::CheckOnly;
  const std::unique_ptr<Program> program = compile(check).program;
  if (program->diags.has_errors()) {
    ++t.check_failures;
    std::ostringstream d;
    program->diags.print(d, false);
    fs::path kept = o.keep / fmt::format("seed-{}", seed);
    std::error_code ec;
    fs::create_directories(o.keep, ec);
    fs::remove_all(kept, ec);
    fs::copy(dir, kept, fs::copy_options::recursive, ec);
    std::cout << fmt::format("CHECK FAILED seed {}: the generated spec does not type-check (kept in {}):\n{}{}\n", seed,
                             kept.string(), c.spec, d.str());
    return false;
  }
  RunRequest req{spec, "", std::nullopt, dir / "scratch"};
  bool ok = compare_case(fmt::format("seed {}", seed), req, variants, o, t, o.keep / fmt::format("seed-{}", seed));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return ok;
}

// examples/chess with a small data set made by its own make_data.pipe; the other examples when their
// data is present (they read images that are not in the repository).
bool run_examples(const VariantSet& variants, const HarnessOptions& o, Tally& t, const fs::path& work) {
  bool ok = true;
  fs::path chess = work / "chess";
  fs::create_directories(chess);
  fs::copy_file(o.source_dir / "examples/chess/chess.pipe", chess / "chess.pipe", fs::copy_options::overwrite_existing);
  std::string make = read_all(o.source_dir / "examples/chess/make_data.pipe");
  std::string small = std::regex_replace(make, std::regex(R"(const RECORDS = [0-9_]+)"), "const RECORDS = 1_500");
  if (small == make) {
    std::cout << "example chess: make_data.pipe has no `const RECORDS = N` line to shrink; not compared\n";
    return false;
  }
  std::ofstream(chess / "make_data.pipe") << small;
  std::string err;
  if (int code = run_command(o.pipec, {"run", (chess / "make_data.pipe").string(), "--quiet"}, chess / "scratch", nullptr, &err)) {
    std::cout << fmt::format("example chess: make_data.pipe failed (exit {}): {}\n", code, err);
    return false;
  }
  // 512-element batches of 1500 records: the 4 batches taken cross the end of the first epoch.
  RunRequest req{chess / "chess.pipe", "", 4, chess / "scratch"};
  ++t.cases;
  ok = compare_case("example chess", req, variants, o, t, o.keep / "example-chess", true) && ok;
  std::cout << "example chess: compared on 4 batches of 1500 generated records\n";
  for (const char* name : {"deblur", "preprocess", "segmentation"}) {
    fs::path spec = o.source_dir / "examples" / name / (std::string(name) + ".pipe");
    if (!fs::exists(spec)) continue;
    CompileRequest check;
    check.path = spec.string();
    check.target = CompileTarget::CheckOnly;
    const std::unique_ptr<Program> program = compile(check).program;
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      RunRequest r{spec, d->name, 3, work / name};
      RunOutput ref = run_variant(reference_variant(), r, o.pipec);
      if (!ref.ok) {
        std::string why = ref.error.substr(0, ref.error.find('\n'));
        std::cout << fmt::format("example {} pipeline {}: not compared (it does not run here: {})\n", name, d->name, why);
        continue;
      }
      ++t.cases;
      ok = compare_case(fmt::format("example {} pipeline {}", name, d->name), r, variants, o, t,
                        o.keep / fmt::format("example-{}-{}", name, d->name), true) && ok;
    }
  }
  return ok;
}

bool parse_args(int argc, char** argv, HarnessOptions& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--seeds") o.seeds = std::stoll(value());
      else if (a == "--first") o.first = std::stoull(value());
      else if (a == "--seed") o.one_seed = std::stoull(value());
      else if (a == "--keep") o.keep = value();
      else if (a == "--pipec") o.pipec = value();
      else if (a == "--source-dir") o.source_dir = value();
      else if (a == "--no-examples") o.examples = false;
      else if (a == "--examples-only") o.generated = false;
      else if (a == "-v" || a == "--verbose") o.verbose = true;
      else if (a == "--spec") o.spec = value();
      else if (a == "--known-bugs") o.known_bugs = true;
      else if (a == "--lib-every") o.lib_every = std::stoi(value());
      else if (a == "--lib-reader") o.lib_reader = value();
      else throw std::invalid_argument("unknown option " + a);
    } catch (const std::exception& e) {
      std::cerr << "difftest: " << e.what() << "\n";
      return false;
    }
  }
  if (o.one_seed || !o.spec.empty()) o.examples = false;
  if (!o.spec.empty()) o.generated = false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  HarnessOptions o;
  if (!parse_args(argc, argv, o)) return 2;
  auto start = std::chrono::steady_clock::now();
  if (std::string problem = comparator_self_check(); !problem.empty()) {
    std::cout << "difftest: " << problem << "\n";
    return 1;
  }
  VariantSet variants = detect_variants(o.pipec, o.lib_reader, o.lib_every);
  std::cout << "difftest: reference " << reference_variant().name << "; variants compared:";
  for (const Variant& v : variants.enabled)
    std::cout << " " << v.name << (v.tolerance == Tolerance::Exact ? " (exact" : " (ulp")
              << (v.every > 1 ? fmt::format(", every {}th case)", v.every) : ")");
  std::cout << "\n";
  for (const std::string& s : variants.skipped) std::cout << "difftest: variant not run: " << s << "\n";
  fs::path work = fs::temp_directory_path() / fmt::format("pipec-difftest-{}", ::getpid());
  fs::create_directories(work);
  Tally t;
  bool ok = true;
  if (o.generated) {
    uint64_t first = o.one_seed ? *o.one_seed : o.first;
    int64_t count = o.one_seed ? 1 : o.seeds;
    for (int64_t i = 0; i < count; ++i) ok = run_generated(first + static_cast<uint64_t>(i), variants, o, t, work) && ok;
  }
  if (o.examples) ok = run_examples(variants, o, t, work) && ok;
  if (!o.spec.empty()) {
    ++t.cases;
    RunRequest req{fs::absolute(o.spec), "", std::nullopt, work / "scratch"};
    ok = compare_case(o.spec.string(), req, variants, o, t, o.keep / "spec", true) && ok;
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("difftest: {} cases in {:.1f} s: {} refused by the checker, {} failed to run in the reference "
                           "(every variant must fail alike), {} mismatches\n",
                           t.cases, secs, t.check_failures, t.run_errors, t.mismatches);
  std::cout << "difftest: comparisons per variant:";
  for (const auto& [name, n] : t.compared) std::cout << " " << name << "=" << n;
  std::cout << "\n";
  return ok ? 0 : 1;
}
