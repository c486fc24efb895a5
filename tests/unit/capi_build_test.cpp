// `pipec build`: libraries built from specs, read by a C program compiled at test time against the
// generated header (tests/capi/capi_test.c), agree with `pipec run --output`, keep their state across
// save/restore, release every tensor and name the missing file when data is missing.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "runtime/io/npy.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::read_all;
using testing::run_pipec;
using testing::run_shell;
using testing::ScratchDir;
using testing::shell_quote;
using testing::write_file;

// Compiles tests/capi/capi_test.c against lib<stem>.h in `lib_dir`.
fs::path compile_c_test(const fs::path& lib_dir, const std::string& stem, const fs::path& exe) {
  std::string upper = stem;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // In a sanitizer build the library needs the sanitizer's runtime, which must be the program's first
  // library: the program is linked with it (PIPEC_SANITIZER_LINK is empty otherwise).
  std::string cmd = fmt::format(
      "cc -std=c11 -Wall -Wextra -Werror -I {0} '-DLIB_HEADER=\"lib{1}.h\"' -DUPPER={2} -DLOWER={1} {3} -o {4} -L {0} "
      "-l{1} -Wl,-rpath,{0} {5}",
      shell_quote(lib_dir.string()), stem, upper,
      shell_quote(std::string(PIPEC_SOURCE_DIR) + "/tests/capi/capi_test.c"), shell_quote(exe.string()),
      PIPEC_SANITIZER_LINK);
  CommandResult r = run_shell(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out;
  return exe;
}

// Every element the C program dumped equals the one `pipec run --output` wrote: bytes and shape.
void expect_dumps_match(const fs::path& dump, const fs::path& npy, const std::vector<std::string>& fields,
                        int elements) {
  for (int k = 0; k < elements; ++k) {
    std::string el = fmt::format("{:06d}", k);
    for (const std::string& f : fields) {
      ASSERT_TRUE(fs::exists(npy / el / (f + ".npy"))) << el << "/" << f;
      ASSERT_TRUE(fs::exists(dump / el / (f + ".bin"))) << el << "/" << f;
      Tensor want = read_npy((npy / el / (f + ".npy")).string());
      std::string got = read_all(dump / el / (f + ".bin"));
      ASSERT_EQ(got.size(), want.byte_size()) << el << "/" << f;
      EXPECT_EQ(std::memcmp(got.data(), want.raw(), got.size()), 0) << el << "/" << f;
      if (fs::exists(dump / el / (f + ".shape"))) {
        std::istringstream in(read_all(dump / el / (f + ".shape")));
        Shape shape;
        for (int64_t d; in >> d;) shape.push_back(d);
        EXPECT_EQ(shape, want.shape()) << el << "/" << f;
      }
    }
  }
  EXPECT_FALSE(fs::exists(dump / fmt::format("{:06d}", elements))) << "more elements than pipec run gave";
}

constexpr const char* kSmallSpec =
    "pipeline small = range(100)\n"
    "  | map(r => { x: f32(r.value) * 0.5, y: r.value * 3, z: f32(r.value) * [1.0, 2.0, 3.0] })\n"
    "  | shuffle(16, seed = 3)\n"
    "  | batch(8)\n";

TEST(CapiBuild, SmallSpecMatchesPipecRunThroughCProgram) {
  ScratchDir d;
  write_file(d / "small.pipe", kSmallSpec);
  auto b = run_pipec({"build", (d / "small.pipe").string(), "-o", (d / "out/libsmall.so").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_TRUE(fs::exists(d / "out/libsmall.so"));
  ASSERT_TRUE(fs::exists(d / "out/pipe.h"));
  std::string header = read_all(d / "out/libsmall.h");
  EXPECT_NE(header.find("#define SMALL_NUM_FIELDS 3"), std::string::npos) << header;
  EXPECT_NE(header.find("{\"z\", \"f32\", {2, 32, 1}, 2, {-1, 3}}"), std::string::npos) << header;

  // Only the C ABI is exported.
  CommandResult nm = run_shell("nm -D --defined-only " + shell_quote((d / "out/libsmall.so").string()));
  ASSERT_EQ(nm.exit_code, 0) << nm.out;
  std::istringstream syms(nm.out);
  int exported = 0;
  for (std::string line; std::getline(syms, line);) {
    std::string name = line.substr(line.rfind(' ') + 1);
    EXPECT_EQ(name.rfind("pipe_", 0), 0u) << "exported: " << name;
    ++exported;
  }
  EXPECT_GE(exported, 14);

  auto r = run_pipec({"run", (d / "small.pipe").string(), "--output", (d / "npy").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path exe = compile_c_test(d / "out", "small", d / "ctest");
  fs::create_directories(d / "dump");
  CommandResult c = run_shell(shell_quote(exe.string()) + " read " + shell_quote((d / "dump").string()) + " 20");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("read 13 elements"), std::string::npos) << c.out;  // 12 batches of 8 and one of 4
  // The map is compiled into the library and bound at pipe_open.
  EXPECT_NE(b.err.find("1 compiled kernels"), std::string::npos) << b.err;
  EXPECT_NE(c.out.find("compiled kernels 1"), std::string::npos) << c.out;
  expect_dumps_match(d / "dump", d / "npy", {"x", "y", "z"}, 13);

  // The same library without kernels (every body on the interpreter) gives the same bytes.
  auto bi =
      run_pipec({"build", (d / "small.pipe").string(), "--no-kernels", "-o", (d / "interp/libsmall.so").string()});
  ASSERT_EQ(bi.exit_code, 0) << bi.err;
  fs::path exe_i = compile_c_test(d / "interp", "small", d / "ctest_interp");
  fs::create_directories(d / "dump_interp");
  CommandResult ci =
      run_shell(shell_quote(exe_i.string()) + " read " + shell_quote((d / "dump_interp").string()) + " 20");
  ASSERT_EQ(ci.exit_code, 0) << ci.out;
  EXPECT_NE(ci.out.find("compiled kernels 0"), std::string::npos) << ci.out;
  expect_dumps_match(d / "dump_interp", d / "npy", {"x", "y", "z"}, 13);
}

// A flat_map's inner map is compiled into the library with the outer one and bound at pipe_open; the
// library gives what `pipec run` gives.
TEST(CapiBuild, AFlatMapsInnerMapIsCompiledIntoTheLibrary) {
  ScratchDir d;
  write_file(d / "nested.pipe",
             "pipeline nested = range(1, 12)\n"
             "  | flat_map(r => range(r.value) | map(q => { x: f32(q.value) * 0.25, y: q.value * 3 }))\n"
             "  | map(r => { x: r.x + 1.0, y: r.y })\n"
             "  | batch(5)\n");
  auto b = run_pipec({"build", (d / "nested.pipe").string(), "-o", (d / "out/libnested.so").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("2 compiled kernels"), std::string::npos) << b.err;
  auto r = run_pipec({"run", (d / "nested.pipe").string(), "--output", (d / "npy").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path exe = compile_c_test(d / "out", "nested", d / "ctest");
  fs::create_directories(d / "dump");
  CommandResult c = run_shell(shell_quote(exe.string()) + " read " + shell_quote((d / "dump").string()) + " 20");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("read 14 elements"), std::string::npos) << c.out;  // 66 rows: 13 batches of 5 and one of 1
  EXPECT_NE(c.out.find("compiled kernels 2"), std::string::npos) << c.out;
  expect_dumps_match(d / "dump", d / "npy", {"x", "y"}, 14);
}

TEST(CapiBuild, ChessExampleReadsGeneratedDataFromAnotherFolder) {
  ScratchDir d;
  // Small sample data in chess's own format, made by a copy of its make_data spec with fewer records.
  std::string make = read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/make_data.pipe");
  auto at = make.find("const RECORDS = 300_000");
  ASSERT_NE(at, std::string::npos);
  make.replace(at, std::string("const RECORDS = 300_000").size(), "const RECORDS = 3_000");
  write_file(d / "data_home/make_data.pipe", make);
  auto m = run_pipec({"run", (d / "data_home/make_data.pipe").string(), "--quiet"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  fs::copy_file(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/chess.pipe", d / "data_home/chess.pipe");

  // The library is built from the example itself; its data comes from data_home (pipe_options.data_dir).
  auto b = run_pipec(
      {"build", std::string(PIPEC_SOURCE_DIR) + "/examples/chess/chess.pipe", "-o", (d / "lib/libchess.so").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(read_all(d / "lib/libchess.h").find("{\"board\", \"f32\", {2, 32, 1}, 4, {512, 8, 8, 24}}"),
            std::string::npos);
  auto r = run_pipec(
      {"run", (d / "data_home/chess.pipe").string(), "--take", "8", "--output", (d / "npy").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path exe = compile_c_test(d / "lib", "chess", d / "ctest");
  fs::create_directories(d / "dump");
  CommandResult c = run_shell(shell_quote(exe.string()) + " read " + shell_quote((d / "dump").string()) + " 8 " +
                              shell_quote((d / "data_home").string()));
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("compiled kernels 1"), std::string::npos) << c.out;
  // 3,000 records (2,625 in the seven training files) make 5 batches of 512 an epoch; 8 batches cross
  // into the second (repeat()).
  expect_dumps_match(d / "dump", d / "npy", {"board", "flags", "score"}, 8);
}

// The C compiler is started with an argument vector, not a shell command: a spec and a library in a
// folder whose name has a space and quotes build and run like any other.
TEST(CapiBuild, PathsWithSpacesAndQuotesReachTheCompilerAsTheyAre) {
  ScratchDir d;
  const fs::path dir = d / "my specs/it's \"here\" $HOME";
  write_file(dir / "small.pipe", kSmallSpec);
  auto b = run_pipec({"build", (dir / "small.pipe").string(), "-o", (dir / "out/libsmall.so").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_TRUE(fs::exists(dir / "out/libsmall.so"));
  EXPECT_NE(read_all(dir / "out/libsmall.h").find("it's \"here\" $HOME"), std::string::npos);
  fs::path exe = compile_c_test(dir / "out", "small", d / "ctest");
  fs::create_directories(d / "dump");
  CommandResult c = run_shell(shell_quote(exe.string()) + " read " + shell_quote((d / "dump").string()) + " 20");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("read 13 elements"), std::string::npos) << c.out;
}

TEST(CapiBuild, MissingDataFileIsNamedInTheError) {
  ScratchDir d;
  write_file(d / "m.pipe",
             "source s = tfrecord(\"data/missing.tfrecord\") {\n  x: i64\n}\n"
             "pipeline p = s | batch(2)\n");
  auto b = run_pipec({"build", (d / "m.pipe").string(), "-o", (d / "out/libmissing.so").string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  fs::path exe = compile_c_test(d / "out", "missing", d / "ctest");
  CommandResult c = run_shell(shell_quote(exe.string()) + " missing " + shell_quote((d / "elsewhere").string()) +
                              " missing.tfrecord");
  EXPECT_EQ(c.exit_code, 0) << c.out;
}

TEST(CapiBuild, RefusesWhatItCannotBuild) {
  ScratchDir d;
  write_file(d / "s.pipe", "pipeline p = range(3) | map(r => { name: \"a\" })\n");
  auto b = run_pipec({"build", (d / "s.pipe").string(), "-o", (d / "libs.so").string()});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("field `name` is a byte string"), std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(d / "libs.so"));

  write_file(d / "ok.pipe", "pipeline p = range(3)\n");
  auto none = run_pipec({"build", (d / "ok.pipe").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--output is required"), std::string::npos) << none.err;

  setenv("PIPEC_RUNTIME_LIB_DIR", (d / "nowhere").c_str(), 1);
  auto nolib = run_pipec({"build", (d / "ok.pipe").string(), "-o", (d / "libok.so").string()});
  unsetenv("PIPEC_RUNTIME_LIB_DIR");
  EXPECT_EQ(nolib.exit_code, 2);
  EXPECT_NE(nolib.err.find("libpipec_runtime.a is missing"), std::string::npos) << nolib.err;

  setenv("PIPEC_CC", (d / "no-such-cc").c_str(), 1);
  auto nocc = run_pipec({"build", (d / "ok.pipe").string(), "-o", (d / "libok.so").string()});
  unsetenv("PIPEC_CC");
  EXPECT_EQ(nocc.exit_code, 2);
  EXPECT_NE(nocc.err.find("was not found"), std::string::npos) << nocc.err;
}

}  // namespace
}  // namespace pipec
