// Every registered diagnostic kind must be exercised by a golden test (tests/lang/**/*.pipe) and
// described in docs/diagnostics.md, so a kind cannot be added without a test and a line of docs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/front/diagnostics.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// kind name -> the golden files whose expected block reports it (with the severity it is reported as).
std::map<std::string, std::set<std::string>> reported_kinds() {
  std::map<std::string, std::set<std::string>> out;
  const std::regex diag(R"(# [^\n]*: (error|warning|note)\[([a-z_0-9]+)\])");
  fs::path root = fs::path(PIPEC_SOURCE_DIR) / "tests" / "lang";
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".pipe") continue;
    std::string text = read(e.path());
    size_t marker = text.find("# ---- expected output ----");
    if (marker == std::string::npos) continue;
    std::string block = text.substr(marker);
    for (std::sregex_iterator it(block.begin(), block.end(), diag), end; it != end; ++it)
      out[(*it)[2].str()].insert((*it)[1].str() + " in " + fs::relative(e.path(), root).string());
  }
  return out;
}

TEST(DiagnosticCoverage, EveryKindHasAGoldenTest) {
  auto reported = reported_kinds();
  ASSERT_FALSE(reported.empty()) << "no expected blocks found under " << PIPEC_SOURCE_DIR << "/tests/lang";
  std::string missing;
  for (const DiagKindInfo& k : all_diag_kinds())
    if (!reported.count(std::string(k.name))) missing += " " + std::string(k.name);
  EXPECT_EQ(missing, "") << "diagnostic kinds that no tests/lang/**/*.pipe expected block reports:" << missing;
}

TEST(DiagnosticCoverage, GoldenTestsReportKindsWithTheirSeverity) {
  std::map<std::string, const DiagKindInfo*> by_name;
  for (const DiagKindInfo& k : all_diag_kinds()) by_name[std::string(k.name)] = &k;
  for (const auto& [name, where] : reported_kinds()) {
    auto it = by_name.find(name);
    ASSERT_NE(it, by_name.end()) << "`" << name << "` is not a registered kind (" << *where.begin() << ")";
    const Severity sev = it->second->severity;
    std::string word = sev == Severity::Warning ? "warning" : sev == Severity::Note ? "note" : "error";
    for (const std::string& w : where) EXPECT_EQ(w.substr(0, w.find(' ')), word) << name << ": " << w;
  }
}

TEST(DiagnosticCoverage, EveryKindIsDocumented) {
  std::string doc = read(fs::path(PIPEC_SOURCE_DIR) / "docs" / "diagnostics.md");
  ASSERT_FALSE(doc.empty()) << "docs/diagnostics.md is missing";
  std::string missing;
  for (const DiagKindInfo& k : all_diag_kinds())
    if (doc.find("### `" + std::string(k.name) + "`") == std::string::npos) missing += " " + std::string(k.name);
  EXPECT_EQ(missing, "") << "kinds without a `### `name`` section in docs/diagnostics.md:" << missing;
}

}  // namespace
}  // namespace pipec
