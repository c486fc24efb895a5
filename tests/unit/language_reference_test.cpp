// Sentences of docs/language.md that a golden file in tests/lang cannot pin: where `import name` looks
// (next to the importing file, then each -I folder in order, then stdlib/), and the size limit on spec
// files. The rest of the reference is pinned by tests/lang/reference and the other golden folders.
#include <gtest/gtest.h>

#include "compiler/compile/compile.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

// The value of const `WHO` as the main file sees it, or the diagnostics.
std::string who(const fs::path& main, const std::vector<std::string>& import_paths) {
  CompileRequest req;
  req.path = main.string();
  req.target = CompileTarget::EveryPipeline;
  req.options.check.import_paths = import_paths;
  req.options.passes.opt_level = 0;
  CompileResult r = compile(req);
  if (!r.ok()) return testing::compile_problems(r);
  // The pipeline is `range(WHO)`: its stage's argument is the const's value.
  const Stage& range = r.pipelines.at(0).plan.stages.at(0);
  return std::to_string(range.args.at(0).second.i);
}

TEST(LanguageReference, ImportLooksNextToTheFileThenInEachIncludeFolderThenInTheStdlib) {
  ScratchDir d;
  const std::string use =
      "import chess_score\nimport helper\npipeline p = range(WHO) | map(r => { s: combined_score(1.0, 0.0) })\n";
  write_file(d / "main" / "spec.pipe", use);
  write_file(d / "first" / "helper.pipe", "const WHO = 1\n");
  write_file(d / "second" / "helper.pipe", "const WHO = 2\n");
  // The first -I folder that has it wins over later ones.
  EXPECT_EQ(who(d / "main" / "spec.pipe", {(d / "first").string(), (d / "second").string()}), "1");
  EXPECT_EQ(who(d / "main" / "spec.pipe", {(d / "second").string(), (d / "first").string()}), "2");
  // The importing file's own folder comes before any -I folder.
  write_file(d / "main" / "helper.pipe", "const WHO = 3\n");
  EXPECT_EQ(who(d / "main" / "spec.pipe", {(d / "first").string()}), "3");
  // stdlib/ comes last: an -I folder's chess_score.pipe hides the stdlib's (which defines combined_score).
  write_file(d / "second" / "chess_score.pipe", "const OTHER = 1\n");
  const std::string hidden = who(d / "main" / "spec.pipe", {(d / "second").string()});
  EXPECT_NE(hidden.find("unknown_name"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("combined_score"), std::string::npos) << hidden;
}

TEST(LanguageReference, SpecFilesLargerThan16MiBAreRefused) {
  std::string big = "# " + std::string((16u << 20) - 3, 'x') + "\npipeline p = range(1)\n";
  CompileResult r = compile_text("big.pipe", big, "p");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(testing::compile_problems(r).find("specs larger than 16777216 bytes are refused"), std::string::npos)
      << testing::compile_problems(r);
  // Just under the limit it is read.
  std::string fits = "# " + std::string((16u << 20) - 30, 'x') + "\npipeline p = range(1)\n";
  EXPECT_TRUE(compile_text("fits.pipe", fits, "p").ok());
}

}  // namespace
}  // namespace pipec
