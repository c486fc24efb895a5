// The `pipec` command line itself: help pages, flag ranges and usage errors (exit code 2), `--take -1`,
// `-D NAME=VALUE` on every command that reads a spec, and `--stats-json` that stays JSON whatever the
// paths hold.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/io/npy.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

const char* kBatchSpec =
    "const BATCH = 4\n"
    "pipeline p = range(20) | map(r => { v: r.value }) | batch(BATCH, drop_remainder = true)\n";

int count_elements(const fs::path& out) {
  int n = 0;
  while (fs::exists(out / fmt::format("{:06d}", n))) ++n;
  return n;
}

TEST(CommandLine, HelpPagesListTheCommandsAndEveryFlag) {
  auto top = run_pipec({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* cmd : {"build", "check", "explain", "fmt", "run", "lsp"})
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
  auto run = run_pipec({"run", "--help"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("usage: pipec run [options] SPEC\n", 0), 0u) << run.out;
  for (const char* flag : {"--pipeline NAME",
                           "--take N",
                           "--output DIR",
                           "--seed S",
                           "--threads N",
                           "--checkpoint DIR",
                           "--checkpoint-every N",
                           "--resume",
                           "--stats-json FILE",
                           "--no-jit",
                           "--device auto|cpu|gpu",
                           "-I DIR",
                           "-D NAME=VALUE",
                           "-w, --no-warnings",
                           "--color WHEN",
                           "-q, --quiet",
                           "-O LEVEL",
                           "-O0",
                           "--disable-pass NAME",
                           "--memory-budget SIZE",
                           "--no-autotune",
                           "--auto-value KIND=N",
                           "--explain-autotune",
                           "--trace FILE.json",
                           "-h, --help"})
    EXPECT_NE(run.out.find(flag), std::string::npos) << flag << "\n" << run.out;
  // Ranges and defaults come from the declarations.
  EXPECT_NE(run.out.find("(1 to 1024)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("default: 100"), std::string::npos) << run.out;
  for (const char* cmd : {"check", "explain", "build", "fmt", "lsp"}) {
    auto h = run_pipec({cmd, "-h"});
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_EQ(h.out.rfind(std::string("usage: pipec ") + cmd, 0), 0u) << h.out;
  }
}

TEST(CommandLine, TakeMinusOneTakesEveryElement) {
  ScratchDir d;
  write_file(d / "p.pipe", kBatchSpec);
  auto all = run_pipec({"run", (d / "p.pipe").string(), "--take", "-1", "--output", (d / "all").string(), "--quiet"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(count_elements(d / "all"), 5);  // 20 values in batches of 4
  auto two = run_pipec({"run", (d / "p.pipe").string(), "--take=2", "--output", (d / "two").string(), "--quiet"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(count_elements(d / "two"), 2);
}

TEST(CommandLine, ValuesOutsideAFlagsRangeAreUsageErrors) {
  ScratchDir d;
  write_file(d / "p.pipe", kBatchSpec);
  const std::string spec = (d / "p.pipe").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"run", spec, "--threads", "0"}, "--threads: must be between 1 and 1024, not 0"},
           {{"run", spec, "--threads", "1025"}, "--threads: must be between 1 and 1024, not 1025"},
           {{"run", spec, "--take", "-2"}, "--take: must be -1 or more, not -2"},
           {{"run", spec, "--checkpoint-every", "0"}, "--checkpoint-every: must be 1 or more, not 0"},
           {{"run", spec, "--take", "many"}, "--take"},
           {{"run", spec, "--device", "tpu"}, "--device: must be auto, cpu or gpu, not `tpu`"},
           {{"explain", spec, "-O2"}, "must be between 0 and 1, not 2"},
           {{"check", spec, "--color=sometimes"}, "--color: must be always, never or auto, not `sometimes`"},
           {{"run", spec, "--resume"}, "--resume requires --checkpoint"},
           {{"run", spec, "--bogus"}, "--bogus"},
           {{"run"}, "SPEC is required"},
           {{"run", spec, spec}, "not expected"},
           {{"build", spec}, "--output is required"},
           {{"check", spec, "-D", "BATCH"}, "-D: must be NAME=VALUE, not `BATCH`"},
       }) {
    auto r = run_pipec(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << "a usage error points at the help: " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CommandLine, DefineOverridesAConstOnEveryCommand) {
  ScratchDir d;
  write_file(d / "p.pipe", kBatchSpec);
  const std::string spec = (d / "p.pipe").string();
  auto check = run_pipec({"check", spec, "-D", "BATCH=5"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  auto explain = run_pipec({"explain", "-O0", "-DBATCH=5", spec});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("batch(#1, size = 5, drop_remainder = true)"), std::string::npos) << explain.out;
  EXPECT_NE(explain.out.find("{v: i64[5]}"), std::string::npos) << explain.out;
  auto run = run_pipec({"run", spec, "-D", "BATCH=5", "--output", (d / "out").string(), "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count_elements(d / "out"), 4);
  EXPECT_EQ(read_npy((d / "out/000000/v.npy").string()).shape(), (Shape{5}));
  auto build = run_pipec({"build", spec, "-D", "BATCH=5", "-o", (d / "lib/libp.so").string()});
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(testing::read_all(d / "lib/libp.h").find("/* v: i64[5] */"), std::string::npos);
}

TEST(CommandLine, ABadDefineIsASpecErrorPointingAtTheCommandLine) {
  ScratchDir d;
  write_file(d / "p.pipe", kBatchSpec);
  const std::string spec = (d / "p.pipe").string();
  for (const char* cmd : {"check", "explain", "run", "build"}) {
    std::vector<std::string> args = {cmd, spec, "-D", "BATCH=2.5"};
    if (std::string(cmd) == "build") args.insert(args.end(), {"-o", (d / "libp.so").string()});
    auto r = run_pipec(args);
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("<command line>:1:10: error[type_mismatch]: const `BATCH` is i64"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("    1 | -D BATCH=2.5\n"), std::string::npos) << r.err;
  }
  auto unknown = run_pipec({"check", spec, "-D", "BACTH=8"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("error[unknown_const_override]: the spec declares no const `BACTH`"), std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("did you mean `BATCH`?"), std::string::npos) << unknown.err;
}

TEST(CommandLine, StatsJsonParsesWhateverThePathsHold) {
  ScratchDir d;
  // A folder name with a quote, a backslash and a space: JSON must escape the first two.
  const fs::path dir = d / "a \"quoted\\ folder";
  write_file(dir / "p.pipe", kBatchSpec);
  const std::string spec = (dir / "p.pipe").string();
  auto r = run_pipec({"run", spec, "--quiet", "--stats-json", (dir / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(testing::read_all(dir / "s.json"));
  EXPECT_EQ(j["spec"], spec);
  EXPECT_EQ(j["pipeline"], "p");
  EXPECT_EQ(j["elements"], 5);
  EXPECT_EQ(j["examples"], 20);
  ASSERT_TRUE(j["stages"].is_array());
  EXPECT_EQ(j["stages"][0]["op"], "range");
  EXPECT_EQ(j["stages"].back()["elements_out"], 5);
  auto unwritable = run_pipec({"run", spec, "--quiet", "--stats-json", (d / "no/such/dir/s.json").string()});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.err.find("cannot write"), std::string::npos) << unwritable.err;
}

}  // namespace
}  // namespace pipec
