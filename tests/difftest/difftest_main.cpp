// `difftest`: differential testing of pipec. For each seed, generates a random type-correct pipeline
// (tests/difftest/spec_generator.h), asserts that it checks, runs it in every variant
// (tests/difftest/variants.h) and compares every field of every element with the reference
// interpreter (tests/difftest/compare_outputs.h). Then does the same for the examples, each in a
// temporary folder with small data made by its own make_data.pipe (never the checkout's data).
//
//   difftest [--seeds N] [--first S] [--seed S] [--keep DIR] [--pipec PATH] [--no-examples] [--examples-only]
//            [--source-dir DIR] [--spec FILE] [--known-bugs] [--lib-every K] [--lib-reader PATH] [-v]
//
// A mismatch prints the seed, the variant, element, field, first differing index and the spec, and
// keeps the case folder under --keep (default ./difftest-failures) for `difftest --seed S`.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
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
  fs::path spec;            // --spec FILE: compare the variants on an existing spec instead
};

struct Tally {
  int64_t cases = 0;
  int64_t check_failures = 0;  // generated specs the checker refused (generator or compiler bugs)
  int64_t run_errors = 0;      // cases whose reference run failed (every variant must fail too)
  int64_t mismatches = 0;
  std::map<std::string, int64_t> compared;        // variant -> cases compared
  std::map<std::string, int64_t> not_applicable;  // variant -> cases it refused, as documented
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

void report_mismatch(const std::string& label, const Variant& v, const Mismatch& m, const fs::path& spec,
                     const fs::path& kept) {
  std::cout << fmt::format("MISMATCH {} variant {} ({}): element {}, field `{}`, index {}: reference {}\n", label,
                           v.name, v.tolerance == Tolerance::Exact ? "exact" : "ulp bound", m.element, m.field, m.index,
                           m.what);
  std::cout << "  spec kept in " << kept.string() << "\n";
  std::string text = read_all(spec);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) std::cout << "  | " << line << "\n";
}

// Keeps a mismatching case's folder (spec and data) as keep_as, replacing an older copy.
void keep_case(const fs::path& case_dir, const fs::path& keep_as) {
  std::error_code ec;
  fs::create_directories(keep_as.parent_path(), ec);
  fs::remove_all(keep_as, ec);
  fs::copy(case_dir, keep_as, fs::copy_options::recursive, ec);
}

// Runs every variant on one spec and compares it with the reference. Returns false on a mismatch.
bool compare_case(const std::string& label, const RunRequest& req, const VariantSet& variants, const HarnessOptions& o,
                  Tally& t, const fs::path& keep_as, bool every_variant = false) {
  RunOutput ref = run_variant(reference_variant(), req, o.pipec);
  int64_t case_index = t.cases;
  if (!ref.ok) {
    ++t.run_errors;
    if (o.verbose) std::cout << fmt::format("{}: the reference run failed: {}\n", label, ref.error);
  }
  bool ok = true;
  // A mix folded from constants must hold what the same mix computes at run time (twin fields).
  if (auto m = compare_twins(ref)) {
    ++t.mismatches;
    ok = false;
    keep_case(req.spec.parent_path(), keep_as);
    report_mismatch(label + " (twin fields)", reference_variant(), *m, req.spec, keep_as);
  }
  for (const Variant& v : variants.enabled) {
    // Slow variants run on every n-th generated case (the first included) and on every example.
    if (!every_variant && (case_index - 1) % v.every != 0) continue;
    RunOutput got = run_variant(v, req, o.pipec, o.lib_reader);
    if (!got.not_applicable.empty()) {
      ++t.not_applicable[v.name];
      std::cout << fmt::format("{}: variant {} does not apply, and refuses it as documented: {}\n", label, v.name,
                               got.not_applicable);
      continue;
    }
    ++t.compared[v.name];
    if (auto m = compare_outputs(ref, got, v.tolerance)) {
      ++t.mismatches;
      ok = false;
      keep_case(req.spec.parent_path(), keep_as);
      report_mismatch(label, v, *m, req.spec, keep_as);
    }
  }
  if (o.verbose && ref.ok) {
    std::cout << fmt::format("{}: {} elements{}\n", label, ref.elements.size(), ok ? " agree" : "");
    for (size_t e = 0; e < ref.elements.size() && e < 20; ++e)
      for (const auto& [name, tensor] : ref.elements[e])
        std::cout << fmt::format("  #{} {}: {}\n", e, name, tensor_text(tensor));
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

// An example as the harness runs it: a copy of its folder's files, with data its own make_data.pipe
// writes into the copy. Rewriting `const NAME = N` lines in the copies makes the data set and the
// images small, so every example is compared in seconds; the pipelines' code stays as written.
struct Shrink {
  const char* file;  // in the example's folder
  const char* name;  // the const
  const char* value;
};
struct ExampleSetup {
  const char* name;
  std::vector<Shrink> shrink;
  std::optional<int64_t> take;  // elements compared per pipeline
};

const std::vector<ExampleSetup> kExamples = {
    // 512-element batches of 1500 records: the 4 batches taken cross the end of the first epoch.
    {"chess", {{"make_data.pipe", "RECORDS", "1_500"}}, 4},
    // Two batches of 4 patches of 64x64, cropped from 72x96 images so the window moves.
    {"deblur",
     {{"make_data.pipe", "PAIRS", "8"},
      {"make_data.pipe", "H", "72"},
      {"make_data.pipe", "W", "96"},
      {"deblur.pipe", "PATCH", "64"},
      {"deblur.pipe", "BATCH", "4"}},
     3},
    // Three batches of 3 (an epoch of 9 samples), 60x80 images cropped and padded to 64x64.
    {"segmentation",
     {{"make_data.pipe", "SAMPLES", "9"},
      {"make_data.pipe", "H", "60"},
      {"make_data.pipe", "W", "80"},
      {"segmentation.pipe", "SIZE", "64"}},
     3},
    // No make_data.pipe: its data (photos and click maps) is not in the repository.
    {"preprocess", {}, 3},
    // Its corpora are committed (corpus/); every batch of each pipeline (52 and 9).
    {"text", {}, std::nullopt},
};

// Folders an example commits beside its files (sample data small enough to keep), copied with them.
const char* const kCommittedDataFolders[] = {"corpus"};

// Copies the example's own files (not its data/ or anything else a user made there) into `dir`,
// shrinks them and makes its data there. Returns why it could not, or "".
std::string prepare_example(const ExampleSetup& e, const HarnessOptions& o, const fs::path& dir) {
  fs::path src = o.source_dir / "examples" / e.name;
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(src))
    if (entry.is_regular_file())
      fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
  for (const char* folder : kCommittedDataFolders)
    if (fs::is_directory(src / folder))
      fs::copy(src / folder, dir / folder, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const Shrink& s : e.shrink) {
    std::string text = read_all(dir / s.file);
    std::regex line(fmt::format(R"(const {} = [0-9_]+)", s.name));
    if (!std::regex_search(text, line)) return fmt::format("{} has no `const {} = N` line to shrink", s.file, s.name);
    std::ofstream(dir / s.file) << std::regex_replace(text, line, fmt::format("const {} = {}", s.name, s.value));
  }
  if (!fs::exists(dir / "make_data.pipe")) return "";
  std::string err;
  if (int code =
          run_command(o.pipec, {"run", (dir / "make_data.pipe").string(), "--quiet"}, dir / "scratch", nullptr, &err))
    return fmt::format("make_data.pipe failed (exit {}): {}", code, err);
  return "";
}

// Every example, each in a folder of its own under `work` with the small data set its make_data.pipe
// makes there, so the result never depends on what a user made in the checkout (examples/*/data).
// Every pipeline of the example's main spec is compared; one that cannot run (an example without its
// data) is reported and not compared.
bool run_examples(const VariantSet& variants, const HarnessOptions& o, Tally& t, const fs::path& work) {
  bool ok = true;
  for (const ExampleSetup& e : kExamples) {
    fs::path dir = work / "examples" / e.name;
    if (std::string why = prepare_example(e, o, dir); !why.empty()) {
      std::cout << fmt::format("example {}: {}; not compared\n", e.name, why);
      ok = false;
      continue;
    }
    fs::path spec = dir / (std::string(e.name) + ".pipe");
    CompileRequest check;
    check.path = spec.string();
    check.target = CompileTarget::CheckOnly;
    const std::unique_ptr<Program> program = compile(check).program;
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      RunRequest r{spec, d->name, e.take, dir / "scratch"};
      RunOutput ref = run_variant(reference_variant(), r, o.pipec);
      std::string label = fmt::format("example {} pipeline {}", e.name, d->name);
      if (!ref.ok) {
        std::cout << fmt::format("{}: not compared (it does not run here: {})\n", label,
                                 ref.error.substr(0, ref.error.find('\n')));
        continue;
      }
      ++t.cases;
      ok = compare_case(label, r, variants, o, t, o.keep / fmt::format("example-{}-{}", e.name, d->name), true) && ok;
      std::cout << fmt::format("{}: compared on {} elements\n", label, ref.elements.size());
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
    for (int64_t i = 0; i < count; ++i)
      ok = run_generated(first + static_cast<uint64_t>(i), variants, o, t, work) && ok;
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
  std::cout << fmt::format(
      "difftest: {} cases in {:.1f} s: {} refused by the checker, {} failed to run in the reference "
      "(every variant must fail alike), {} mismatches\n",
      t.cases, secs, t.check_failures, t.run_errors, t.mismatches);
  std::cout << "difftest: comparisons per variant:";
  for (const auto& [name, n] : t.compared) std::cout << " " << name << "=" << n;
  std::cout << "\n";
  if (!t.not_applicable.empty()) {
    std::cout << "difftest: cases a variant does not apply to (refused as documented):";
    for (const auto& [name, n] : t.not_applicable) std::cout << " " << name << "=" << n;
    std::cout << "\n";
  }
  return ok ? 0 : 1;
}
