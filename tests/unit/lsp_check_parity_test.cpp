// The editor shows what `pipec check` prints. Every spec of tests/lang (its failing ones among them),
// the examples, and train blocks with errors found only after the checker (when the step graph is
// built) go through `pipec check` (cmd_check, whose output must be the diagnostics of
// compile(check_request(...))) and through the language server (an in-process server the spec is
// opened in); the two lists of diagnostics must match one for one: file, line, column, range, kind,
// severity, message, help and notes.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/compile/compile.h"
#include "compiler/driver/commands.h"
#include "compiler/lsp/compile_document.h"
#include "compiler/lsp/positions.h"
#include "tests/unit/lsp_test_client.h"

namespace pipec::lsp {
namespace {

namespace fs = std::filesystem;
using namespace test_client;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// UTF-16 code units of UTF-8 text (a four-byte character is two).
uint32_t utf16_units(std::string_view s) {
  uint32_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
    if (c >= 0xF0) ++n;
  }
  return n;
}

// The LSP position of byte `offset` of `f`, worked out from pipec's own line and column (what
// `pipec check` prints), not from the server's LineIndex.
Json lsp_position(const SourceFile& f, uint32_t offset) {
  LineCol lc = f.line_col(offset);
  std::string_view line = f.line_text(lc.line);
  uint32_t col = std::min<uint32_t>(lc.col - 1, static_cast<uint32_t>(line.size()));
  return position(static_cast<int>(lc.line - 1), static_cast<int>(utf16_units(line.substr(0, col))));
}

Json lsp_range(const SourceFile& f, SourceRange r) {
  return Json::object({{"start", lsp_position(f, r.begin)}, {"end", lsp_position(f, std::max(r.begin, r.end))}});
}

int severity_code(Severity s) { return s == Severity::Error ? 1 : s == Severity::Warning ? 2 : 3; }

// What `pipec check PATH` writes to stderr (without colour).
std::string pipec_check_output(const std::string& path, int& exit_code) {
  testing::internal::CaptureStderr();
  exit_code = cmd_check({"--color", "never", path});
  return testing::internal::GetCapturedStderr();
}

// The diagnostics the server publishes for `path` when it is opened with the file's contents.
Json editor_diagnostics(const std::string& path, const std::string& text) {
  Client c;
  c.initialize();
  std::string uri = path_to_uri(path);
  c.open(text, uri);
  return c.diagnostics(uri).json();
}

/// Compares the two for the spec at `path`; returns the number of diagnostics compared.
size_t compare_one(const std::string& path) {
  SCOPED_TRACE(path);
  std::string text = read_file(path);

  // `pipec check`: its output is exactly the diagnostics of compile(check_request(path)), and the exit
  // code says whether there were errors.
  CompileResult check = compile(check_request(path));
  const Program& p = *check.program;
  std::ostringstream printed;
  p.diags.print(printed);
  if (check.status != CompileStatus::Ok && check.status != CompileStatus::SpecErrors)
    printed << "pipec check: " << check.error << "\n";
  int exit_code = -1;
  EXPECT_EQ(pipec_check_output(path, exit_code), printed.str());
  EXPECT_EQ(exit_code, check.ok() ? 0 : check.status == CompileStatus::SpecErrors ? 1 : 2);

  // The editor's diagnostics, one for one.
  Json got = editor_diagnostics(path, text);
  const std::vector<Diagnostic>& want = p.diags.all();
  std::optional<CompileFailure> failure = compile_failure(check);
  EXPECT_EQ(got.size(), want.size() + (failure ? 1 : 0)) << got.dump(2);
  if (got.size() != want.size() + (failure ? 1 : 0)) return 0;
  uint32_t main_file = p.main().file;
  for (size_t i = 0; i < want.size(); ++i) {
    const Diagnostic& d = want[i];
    JsonView g(got[i]);
    SCOPED_TRACE(p.diags.render(d));
    EXPECT_EQ(g["code"].as_string(), diag_kind_info(d.kind).name);
    EXPECT_EQ(g["severity"].as_int(), severity_code(d.severity));
    EXPECT_EQ(g["source"].as_string(), "pipec");
    std::string message = d.message;
    std::vector<const DiagNote*> located;
    for (const DiagNote& n : d.notes) {
      if (n.range.valid()) located.push_back(&n);
      else message += "\nnote: " + n.message;
    }
    if (!d.help.empty()) message += "\nhelp: " + d.help;
    if (d.range.valid() && d.range.file != main_file) {
      // In an imported file: on an `import` line of the spec, the message naming the file, line and column.
      const SourceFile& f = p.sources.file(d.range.file);
      LineCol lc = f.line_col(d.range.begin);
      EXPECT_EQ(g["message"].as_string(),
                "in " + f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": " + message);
      std::string_view line = p.sources.file(main_file).line_text(g["range"]["start"]["line"].as_int() + 1);
      EXPECT_EQ(line.substr(0, 7), "import ") << g["range"];
    } else {
      EXPECT_EQ(g["message"].as_string(), message);
      Json where = d.range.valid() ? lsp_range(p.sources.file(main_file), d.range) : range(0, 0, 0, 0);
      EXPECT_EQ(g["range"].json(), where);
    }
    // Notes with a place are related information, in their own file.
    EXPECT_EQ(g["relatedInformation"].size(), located.size());
    for (size_t k = 0; k < located.size() && k < g["relatedInformation"].size(); ++k) {
      JsonView r = g["relatedInformation"][k];
      const SourceFile& f = p.sources.file(located[k]->range.file);
      EXPECT_EQ(r["message"].as_string(), located[k]->message);
      EXPECT_EQ(r["location"]["uri"].as_string(), path_to_uri(f.path()));
      EXPECT_EQ(r["location"]["range"].json(), lsp_range(f, located[k]->range));
    }
  }
  if (failure) {
    JsonView g(got[want.size()]);
    EXPECT_EQ(g["code"].as_string(), "internal_error");
    EXPECT_EQ(g["severity"].as_int(), 1);
    EXPECT_EQ(g["message"].as_string() + "\n", "pipec check: " + check.error + "\n");
  }
  return got.size();
}

std::vector<std::string> lang_specs() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(PIPEC_SOURCE_DIR) / "tests/lang")) {
    if (!e.is_regular_file() || e.path().extension() != ".pipe") continue;
    // Helpers that tests import (tests/lang/CATEGORY/imports/...) are not tests (as lang_tests decides).
    fs::path rel = fs::relative(e.path(), fs::path(PIPEC_SOURCE_DIR) / "tests/lang");
    if (rel.parent_path().filename() == "imports" && !rel.parent_path().parent_path().empty()) continue;
    out.push_back(e.path().lexically_normal().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(LspCheckParity, EverySpecOfTheLanguageTests) {
  size_t failing = 0, diagnostics = 0, skipped = 0;
  for (const std::string& path : lang_specs()) {
    // `# -D NAME=VALUE` overrides are command-line flags: an editor has none.
    std::string text = read_file(path);
    if (text.find("\n# -D ") != std::string::npos || text.rfind("# -D ", 0) == 0) {
      ++skipped;
      continue;
    }
    bool fail = fs::path(path).filename().string().rfind("fail_", 0) == 0;
    size_t n = compare_one(path);
    if (fail) {
      ++failing;
      EXPECT_GT(n, 0u) << path << ": a failing spec without diagnostics in the editor";
    }
    diagnostics += n;
  }
  // The folders hold about ninety failing specs; a glob that found none would pass vacuously.
  EXPECT_GT(failing, 60u);
  EXPECT_GT(diagnostics, 100u);
  EXPECT_LT(skipped, 10u);
}

TEST(LspCheckParity, TheExamples) {
  for (const auto& e : fs::directory_iterator(fs::path(PIPEC_SOURCE_DIR) / "examples"))
    for (const auto& f : fs::directory_iterator(e.path()))
      if (f.path().extension() == ".pipe") compare_one(f.path().lexically_normal().string());
}

// Errors found when a train block's step graph is built, after the checker passed the spec: the editor
// has them because it compiles as `pipec check` does (the checker alone, check_text, does not).
TEST(LspCheckParity, TrainBlockErrorsFoundAfterTheChecker) {
  const std::string head =
      "source s = tfrecord(\"data/*.tfrecord\") { x: f32[4], y: f32[2], i: i64 }\n"
      "pipeline p = s | batch(8, drop_remainder = true)\n";
  struct Case {
    std::string name, spec, kind;
  };
  const std::vector<Case> cases = {
      {"random_op",
       head + "model noisy(x: f32[4]) -> f32[2] { (x + random_normal([4], std = 0.1)) | dense(2) }\n"
              "train t = { data = p, model = noisy(x), loss = mse(y), optimizer = adam() }\n",
       "unsupported_in_model"},
      {"gather",
       head + "model picked(x: f32[4]) -> f32[2] {\n  h = x | dense(4)\n  h[[0, 3]]\n}\n"
              "train t = { data = p, model = picked(x), loss = mse(y), optimizer = adam() }\n",
       "not_differentiable"},
      {"batched_twice",
       head + "pipeline twice = p | batch(2)\n"
              "model net(x: f32[4]) -> f32[2] { x | dense(2) }\n"
              "train t = { data = twice, model = net(x), loss = mse(y), optimizer = sgd() }\n",
       "unsupported_in_model"},
      {"two_blocks",
       head + "model noisy(x: f32[4]) -> f32[2] { (x + random_uniform([4])) | dense(2) }\n"
              "model picked(x: f32[4]) -> f32[2] {\n  h = x | dense(4)\n  h[[1, 2]]\n}\n"
              "train t = { data = p, model = noisy(x), loss = mse(y), optimizer = adam() }\n"
              "train u = { data = p, model = picked(x), loss = mae(y), optimizer = sgd() }\n",
       "not_differentiable"},
  };
  fs::path dir = fs::temp_directory_path() / ("pipec_lsp_parity_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = (dir / (c.name + ".pipe")).string();
    std::ofstream(path) << c.spec;
    std::unique_ptr<Program> checked = check_text(path, c.spec);
    EXPECT_FALSE(checked->diags.has_errors()) << "the checker alone must pass it: " << c.name;
    EXPECT_GT(compare_one(path), 0u);
    Json got = editor_diagnostics(path, c.spec);
    bool found = false;
    for (const Json& d : got) found |= d["code"].get<std::string>() == c.kind;
    EXPECT_TRUE(found) << got.dump(2);
  }
  fs::remove_all(dir);
}

// A failure that is no diagnostic (a step graph that does not verify) is shown on the block's name.
TEST(LspCheckParity, InternalErrorsAreShownOnTheirDeclaration) {
  const std::string spec =
      "source s = tfrecord(\"data/*.tfrecord\") { x: f32[4], y: f32[2] }\n"
      "pipeline p = s | batch(8, drop_remainder = true)\n"
      "model net(x: f32[4]) -> f32[2] { x | dense(2) }\n"
      "train fit = { data = p, model = net(x), loss = mse(y), optimizer = adam() }\n";
  CompileResult r = compile(check_request("/tmp/pipec-lsp-test/spec.pipe", {}, spec));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(compile_failure(r));
  r.status = CompileStatus::InternalError;
  r.error = "internal error: the step graph does not verify\n";
  r.error_decl = r.program->global("fit");
  std::optional<CompileFailure> f = compile_failure(r);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->message, "internal error: the step graph does not verify");
  EXPECT_EQ(f->range.begin, spec.find("fit"));
  EXPECT_EQ(f->range.end, spec.find("fit") + 3);
  r.error_decl = nullptr;  // nothing to point at: the start of the file
  f = compile_failure(r);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->range.begin, 0u);
  EXPECT_EQ(f->range.end, 0u);
}

}  // namespace
}  // namespace pipec::lsp
