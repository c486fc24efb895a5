// tf.data conformance: every folder tests/conformance/fixtures/<case>/ that holds a spec.pipe is one test.
// The runner runs `pipec run <spec> --output <tmp> --quiet` with the repository root as the working
// directory and compares what it wrote with expected/, which real TensorFlow produced
// (tests/conformance/make_fixtures.py; see tests/conformance/README.md):
//   - the same element folders (000000, 000001, ...) and in each the same fields (<field>.npy);
//   - per field the same NumPy dtype (|S<n> included), the same shape, and the same values: exact for
//     integers, bools and bytes; exact for floats (NaN equals NaN) unless case.txt sets float_ulp = N.
// A case whose case.txt says `expect_error = 1` is one where tf.data fails: pipec must exit with status
// 1 (a data error), not 0, not a crash.
//
// Set PIPEC_CONFORMANCE_KEEP=1 to keep the output folders of failing cases for inspection.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/npy.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = PIPEC_SOURCE_DIR;
const fs::path kFixtures = kRepo / "tests" / "conformance" / "fixtures";
constexpr int kTimeoutSeconds = 120;

std::vector<std::string> discover_cases() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kFixtures, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "spec.pipe")) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// case.txt: `key = value` lines; '#' starts a comment line.
std::map<std::string, std::string> read_case_options(const fs::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  auto trim = [](std::string s) {
    size_t b = s.find_first_not_of(" \t\r");
    size_t e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tail(const std::string& s, size_t n = 3000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

struct ProcessResult {
  bool started = false;
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string output;  // stdout and stderr together
  std::string error;   // why it could not start
};

// Runs argv[0] with `cwd` as the working directory, stdout+stderr captured in `log`, killed after a timeout.
ProcessResult run_process(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log) {
  ProcessResult r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("fork failed: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), STDOUT_FILENO);
      dup2(fileno(f), STDERR_FILENO);
    }
    if (chdir(cwd.c_str()) != 0) _exit(126);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot execute %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  r.started = true;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutSeconds);
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      r.error = std::string("waitpid failed: ") + std::strerror(errno);
      return r;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  r.output = read_text(log);
  return r;
}

std::vector<std::string> sorted_entries(const fs::path& dir, bool dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (dirs ? e.is_directory() : (e.is_regular_file() && e.path().extension() == ".npy"))
      out.push_back(dirs ? e.path().filename().string() : e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string join_some(const std::vector<std::string>& v, size_t max = 8) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max) s += ", ... (" + std::to_string(v.size()) + " in all)";
  return s;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Distance in units in the last place between two finite floats of the same type.
template <class F, class I>
uint64_t ulp_distance(F a, F b) {
  I ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  // Map the sign-magnitude encoding onto a monotonic integer line.
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  return ia > ib ? static_cast<uint64_t>(ia) - static_cast<uint64_t>(ib)
                 : static_cast<uint64_t>(ib) - static_cast<uint64_t>(ia);
}

std::string index_to_string(int64_t flat, const Shape& shape) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return shape_to_string(idx);
}

std::string printable(std::string_view s) {
  std::string out = "b'";
  for (unsigned char c : s.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

// Compares two decoded arrays of the same dtype and shape; returns "" or what differs.
std::string compare_values(const Tensor& want, const Tensor& got, uint64_t float_ulp) {
  int64_t n = want.num_elements();
  int64_t bad = 0, first = -1;
  std::string first_want, first_got;
  auto note = [&](int64_t i, std::string w, std::string g) {
    if (bad++ == 0) {
      first = i;
      first_want = std::move(w);
      first_got = std::move(g);
    }
  };
  auto floats = [&](auto* wp, auto* gp, auto tag) {
    using F = std::remove_const_t<std::remove_pointer_t<decltype(wp)>>;
    using I = decltype(tag);
    for (int64_t i = 0; i < n; ++i) {
      F a = wp[i], b = gp[i];
      bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same && float_ulp > 0 && std::isfinite(a) && std::isfinite(b)) same = ulp_distance<F, I>(a, b) <= float_ulp;
      if (!same) {
        std::ostringstream w, g;
        w.precision(std::is_same_v<F, float> ? 9 : 17);
        g.precision(std::is_same_v<F, float> ? 9 : 17);
        w << a;
        g << b;
        note(i, w.str(), g.str());
      }
    }
  };
  switch (want.dtype()) {
    case DType::F32: floats(want.data<float>(), got.data<float>(), int32_t{}); break;
    case DType::F64: floats(want.data<double>(), got.data<double>(), int64_t{}); break;
    case DType::Bytes:
      for (int64_t i = 0; i < n; ++i)
        if (want.str(i) != got.str(i)) note(i, printable(want.str(i)), printable(got.str(i)));
      break;
    default: {
      // Integers, bools and f16: bit-exact, element by element (printed as the integer of that width).
      size_t w = dtype_size(want.dtype());
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* a = want.raw() + i * w;
        const uint8_t* b = got.raw() + i * w;
        if (std::memcmp(a, b, w) != 0) {
          auto value = [&](const uint8_t* p) {
            int64_t v = 0;
            switch (want.dtype()) {
              case DType::I8: v = *reinterpret_cast<const int8_t*>(p); break;
              case DType::I16: v = *reinterpret_cast<const int16_t*>(p); break;
              case DType::I32: v = *reinterpret_cast<const int32_t*>(p); break;
              case DType::I64: v = *reinterpret_cast<const int64_t*>(p); break;
              case DType::U16:
              case DType::F16: v = *reinterpret_cast<const uint16_t*>(p); break;
              case DType::U32: v = *reinterpret_cast<const uint32_t*>(p); break;
              case DType::U64: return std::to_string(*reinterpret_cast<const uint64_t*>(p));
              default: v = *p; break;
            }
            return std::to_string(v);
          };
          note(i, value(a), value(b));
        }
      }
    }
  }
  if (bad == 0) return "";
  std::ostringstream msg;
  msg << bad << " of " << n << " values differ; first at " << index_to_string(first, want.shape()) << ": expected "
      << first_want << ", got " << first_got;
  return msg.str();
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesTfData) {
  const std::string name = GetParam();
  const fs::path dir = kFixtures / name;
  auto options = read_case_options(dir / "case.txt");
  const bool expect_error = options.count("expect_error") && options["expect_error"] != "0";
  uint64_t float_ulp = options.count("float_ulp") ? std::stoull(options["float_ulp"]) : 0;
  if (options.count("description")) RecordProperty("description", options["description"]);

  const fs::path pipec = PIPEC_BINARY;
  ASSERT_TRUE(fs::exists(pipec)) << "the pipec binary " << pipec << " does not exist; build the `pipec` target first";

  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/pipec_conformance_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  ASSERT_NE(mkdtemp(buf.data()), nullptr) << "mkdtemp failed: " << std::strerror(errno);
  const fs::path tmp = buf.data();
  const fs::path out = tmp / "out";
  bool keep = false;

  std::string spec = (fs::path("tests") / "conformance" / "fixtures" / name / "spec.pipe").string();
  // Specs that read the shared test data name it relative to a checkout that sits beside shared/; a
  // clone elsewhere (CI) runs a copy that names the shared folder this build found instead.
  {
    std::ifstream in(kRepo / spec);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string marker = "../../../../../shared/";
    if (text.find(marker) != std::string::npos) {
      for (size_t at; (at = text.find(marker)) != std::string::npos;)
        text.replace(at, marker.size(), std::string(PIPEC_SHARED_DIR) + "/");
      spec = (tmp / "spec.pipe").string();
      std::ofstream(spec) << text;
    }
  }
  std::vector<std::string> argv = {pipec.string(), "run", spec, "--output", out.string(), "--quiet"};
  if (options.count("pipeline")) {
    argv.push_back("--pipeline");
    argv.push_back(options["pipeline"]);
  }
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  ProcessResult r = run_process(argv, kRepo, tmp / "log.txt");

  auto finish = [&] {
    const char* k = std::getenv("PIPEC_CONFORMANCE_KEEP");
    if (keep && k && *k && std::string(k) != "0") {
      std::cerr << "[conformance] kept " << tmp << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
  };
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{finish};
  keep = true;

  ASSERT_TRUE(r.started) << r.error;
  ASSERT_FALSE(r.timed_out) << "`" << command << "` ran longer than " << kTimeoutSeconds << " s and was killed\n"
                            << tail(r.output);
  ASSERT_TRUE(r.exited) << "`" << command << "` crashed with signal " << r.signal << " (" << strsignal(r.signal)
                        << ")\n"
                        << tail(r.output);
  if (r.exit_code != 0 && (r.output.find("unknown command") != std::string::npos ||
                           r.output.find("usage: pipec <command>") != std::string::npos)) {
    FAIL() << "pipec has no working `run` command yet: `" << command << "` exited with status " << r.exit_code << "\n"
           << tail(r.output);
  }
  if (expect_error) {
    EXPECT_EQ(r.exit_code, 1) << "tf.data fails on this input (" << options["description"]
                              << "; TensorFlow said: " << options["tf_error"] << "), so `" << command
                              << "` must fail with a data error (status 1)\n"
                              << tail(r.output);
    if (r.exit_code == 1) keep = false;
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << "`" << command << "` failed\n" << tail(r.output);

  const fs::path expected = dir / "expected";
  std::vector<std::string> want_elems = sorted_entries(expected, true);
  std::vector<std::string> got_elems = sorted_entries(out, true);
  if (options.count("elements")) {
    ASSERT_EQ(want_elems.size(), std::stoul(options["elements"])) << "the fixture lost element folders: regenerate it";
  }
  EXPECT_EQ(got_elems.size(), want_elems.size())
      << "tf.data yields " << want_elems.size() << " elements, pipec wrote " << got_elems.size()
      << "\n  missing: " << join_some(minus(want_elems, got_elems))
      << "\n  extra: " << join_some(minus(got_elems, want_elems));

  int failures = 0;
  for (const std::string& e : want_elems) {
    if (!fs::is_directory(out / e)) continue;
    std::vector<std::string> want_fields = sorted_entries(expected / e, false);
    std::vector<std::string> got_fields = sorted_entries(out / e, false);
    EXPECT_EQ(got_fields, want_fields) << "element " << e
                                       << ": fields differ (missing: " << join_some(minus(want_fields, got_fields))
                                       << "; extra: " << join_some(minus(got_fields, want_fields)) << ")";
    for (const std::string& f : want_fields) {
      if (!fs::exists(out / e / (f + ".npy"))) continue;
      SCOPED_TRACE("element " + e + ", field `" + f + "`");
      NpyHeader hw, hg;
      Tensor tw, tg;
      try {
        tw = read_npy((expected / e / (f + ".npy")).string(), &hw);
      } catch (const DataError& err) {
        ADD_FAILURE() << "cannot read the expected file: " << err.what();
        continue;
      }
      try {
        tg = read_npy((out / e / (f + ".npy")).string(), &hg);
      } catch (const DataError& err) {
        ADD_FAILURE() << "pipec wrote a file that is not valid .npy: " << err.what();
        ++failures;
        continue;
      }
      if (hw.descr != hg.descr || hw.shape != hg.shape) {
        ADD_FAILURE() << "expected dtype '" << hw.descr << "' shape " << shape_to_string(hw.shape) << ", got '"
                      << hg.descr << "' shape " << shape_to_string(hg.shape);
        ++failures;
        continue;
      }
      std::string diff = compare_values(tw, tg, float_ulp);
      if (!diff.empty()) {
        ADD_FAILURE() << diff;
        ++failures;
      }
      if (failures > 20) {
        ADD_FAILURE() << "stopping after 20 differing fields";
        return;
      }
    }
  }
  if (!HasFailure()) keep = false;
}

std::string case_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Conformance, ::testing::ValuesIn(discover_cases()), case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

TEST(ConformanceFixtures, Exist) {
  EXPECT_GE(discover_cases().size(), 10u)
      << "no conformance fixtures under " << kFixtures << "; regenerate them with tests/conformance/make_fixtures.py";
}

}  // namespace
}  // namespace pipec
