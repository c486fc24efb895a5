// `pipec build --train T --weights W`: a model library, called from a C program compiled at test time
// against its header (tests/serve/predict_test.c), answers with the forward pass `pipec run` evaluates:
// bit for bit the fast executor's on the validation graph at the same batch size, within 1e-5 of the
// reference executor's (what `pipec run`'s evaluation runs on) and at other batch
// sizes; from several threads at once; refusing bad requests, foreign weights and unservable specs with
// messages that name the input, the tensor or the stage.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/core/half.h"
#include "runtime/io/npy.h"
#include "runtime/serve/fold_parameter_casts.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/persist/weights_file.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

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

// The first 512 held-out records as a request carries them (`d` alone: the model needs nothing else),
// and the validation pipeline's first batch, from the same records.
constexpr const char* kRawPipeline =
    "\npipeline raw = held_out_positions | take(512) | map(r => { d: r.d }) | batch(512)\n";

// A trained chess net, its model library and a C program calling it, made once for the suite.
class ServeChess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    const ScratchDir& d = *dir_;
    std::string make = read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/make_data.pipe");
    auto at = make.find("const RECORDS = 300_000");
    ASSERT_NE(at, std::string::npos);
    make.replace(at, std::string("const RECORDS = 300_000").size(), "const RECORDS = 8_000");
    write_file(d / "make_data.pipe", make);
    auto m = run_pipec({"run", (d / "make_data.pipe").string(), "--quiet"});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    // In fp32, so that agreement with the evaluation is not hidden by bf16's rounding of the output
    // (the mixed_bf16 example itself is served in tests/python/test_docs.py).
    std::string chess = read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/chess.pipe");
    auto p = chess.find("precision = mixed_bf16");
    ASSERT_NE(p, std::string::npos);
    chess.replace(p, std::string("precision = mixed_bf16").size(), "precision = fp32");
    write_file(d / "chess.pipe", chess + kRawPipeline);
    auto t = run_pipec({"run", spec(), "--steps", "3", "--save", (d / "w.safetensors").string(), "--quiet"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    auto b = run_pipec({"build", spec(), "--train", "chess", "--weights", (d / "w.safetensors").string(), "-o",
                        (d / "lib/libchess_model.so").string()});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.err.find("inputs d: u8[194]; 1 preprocessing kernels compiled"), std::string::npos) << b.err;
    for (const char* p : {"raw", "held_out"}) {
      auto r = run_pipec({"run", spec(), "--pipeline", p, "--take", "1", "--output", (d / p).string(), "--quiet"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    Tensor raw = read_npy((d / "raw/000000/d.npy").string());
    ASSERT_EQ(raw.shape(), (Shape{512, 194}));
    write_file(d / "d.bin", std::string(reinterpret_cast<const char*>(raw.raw()), raw.byte_size()));
    // In a sanitizer build the library needs the sanitizer's runtime first: the program links it.
    const std::string cc = fmt::format(
        "cc -std=c11 -Wall -Wextra -Werror -I {0} '-DLIB_HEADER=\"libchess_model.h\"' -DUPPER=CHESS_MODEL {1} -o {2} "
        "-L {0} -lchess_model -Wl,-rpath,{0} -lpthread {3}",
        shell_quote((d / "lib").string()), shell_quote(std::string(PIPEC_SOURCE_DIR) + "/tests/serve/predict_test.c"),
        shell_quote((d / "predict_test").string()), PIPEC_SANITIZER_LINK);
    CommandResult c = run_shell(cc);
    ASSERT_EQ(c.exit_code, 0) << cc << "\n" << c.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string spec() { return (*dir_ / "chess.pipe").string(); }
  static fs::path path(const std::string& name) { return *dir_ / name; }

  // The C program's `predict` on the first `rows` requests; its output as floats.
  static std::vector<float> predict(int rows, const std::string& weights = "") {
    const std::string out = path(fmt::format("out{}.bin", rows)).string();
    std::string cmd = fmt::format("{} predict {} {} {}", shell_quote(path("predict_test").string()),
                                  shell_quote(path("d.bin").string()), rows, shell_quote(out));
    if (!weights.empty()) cmd += " " + shell_quote(weights);
    CommandResult r = run_shell(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::string bytes = read_all(out);
    std::vector<float> v(bytes.size() / sizeof(float));
    if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
  }

  // The validation graph's forward pass on the held-out batch, on `ex` with the saved weights.
  static std::vector<float> evaluate(bool fast) {
    CompileRequest request;
    request.path = spec();
    request.target = CompileTarget::Train;
    request.options.cpu_kernels = CpuKernels::None;  // expr nodes on the loops the library runs them on
    CompileResult r = compile(request);
    EXPECT_TRUE(r.ok()) << r.error;
    if (!r.ok()) return {};
    const ModelGraph& g = r.trains[0].program.eval->graph;
    std::unique_ptr<StepExecutor> ex;
    if (fast) ex = std::make_unique<FastExecutor>(g, 0);
    else ex = std::make_unique<ReferenceExecutor<float>>(g, 0);
    load_weights(g, path("w.safetensors").string(), ex->buffers());
    ex->sync_to_device();
    std::vector<Tensor> inputs;
    for (const std::string& f : g.input_fields) inputs.push_back(read_npy(path("held_out/000000/" + f + ".npy")));
    ex->run(inputs, nullptr, 0, OpCategory::Forward);
    Tensor out = ex->host_value(g.output);
    return std::vector<float>(out.data<float>(), out.data<float>() + out.num_elements());
  }

  static ScratchDir* dir_;
};
ScratchDir* ServeChess::dir_ = nullptr;

TEST_F(ServeChess, EqualsTheEvaluationForwardPass) {
  std::vector<float> served = predict(512);
  ASSERT_EQ(served.size(), 512u);
  // The same executor (the fast one, oneDNN) at the same batch size: bit for bit.
  std::vector<float> fast = evaluate(true);
  ASSERT_EQ(fast.size(), served.size());
  EXPECT_EQ(std::memcmp(fast.data(), served.data(), served.size() * sizeof(float)), 0);
  // The reference executor `pipec run` evaluates on (f32 with f64 sums): the outputs are tanh's in
  // [-1, 1], moved by oneDNN's other summation order by about 1e-7 (6e-8 when this was written).
  std::vector<float> reference = evaluate(false);
  ASSERT_EQ(reference.size(), served.size());
  double worst = 0;
  for (size_t i = 0; i < served.size(); ++i) worst = std::max(worst, std::abs(double(served[i]) - reference[i]));
  EXPECT_LE(worst, 1e-5) << "largest |served - reference|";
  std::cout << "largest |served - reference| over 512 positions: " << worst << "\n";
  // Not a constant model: the predictions differ between positions.
  EXPECT_NE(*std::min_element(served.begin(), served.end()), *std::max_element(served.begin(), served.end()));
}

TEST_F(ServeChess, OtherBatchSizesAgreeWithinTolerance) {
  std::vector<float> whole = predict(512);
  for (int rows : {1, 100}) {
    std::vector<float> part = predict(rows);
    ASSERT_EQ(part.size(), static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) EXPECT_NEAR(part[i], whole[i], 1e-5) << "row " << i << " of " << rows;
  }
}

TEST_F(ServeChess, RefusesBadRequestsAndForeignWeights) {
  CommandResult r = run_shell(
      fmt::format("{} errors {} 512", shell_quote(path("predict_test").string()), shell_quote(path("d.bin").string())));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("errors ok"), std::string::npos) << r.out;

  // Weights of another model, and a damaged file, named with what is wrong.
  std::vector<float> x = {1, 2};
  write_safetensors(path("other.safetensors").string(), {{"dense/kernel", {2}, x.data()}});
  r = run_shell(fmt::format("{} open_fails {} {}", shell_quote(path("predict_test").string()),
                            shell_quote(path("other.safetensors").string()),
                            shell_quote("do not fit model `chess_net`")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string w = read_all(path("w.safetensors"));
  write_file(path("cut.safetensors"), w.substr(0, w.size() / 2));
  r = run_shell(fmt::format("{} open_fails {} {}", shell_quote(path("predict_test").string()),
                            shell_quote(path("cut.safetensors").string()), "cut.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // The same weights given at open answer as the built-in ones.
  EXPECT_EQ(predict(100, path("w.safetensors").string()), predict(100));

  // `pipec build` checks the weights itself.
  auto b = run_pipec({"build", spec(), "--train", "chess", "--weights", path("other.safetensors").string(), "-o",
                      path("x/libx.so").string()});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("the weights do not fit model `chess_net`"), std::string::npos) << b.err;
  b = run_pipec({"build", spec(), "--train", "chess", "-o", path("x/libx.so").string()});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("--train and --weights go together"), std::string::npos) << b.err;
}

// What cannot be served is refused at build time, naming the stage or op and where it is written.
TEST(ServeBuild, RefusesPreprocessingThatIsNotAFunctionOfTheRequest) {
  ScratchDir d;
  auto spec_with = [&](const std::string& stages) {
    return "pipeline data = range(64)\n"
           "  | map(r => { x: f32(r.value) * [1.0, 2.0], y: f32(r.value) })\n" +
           stages +
           "  | batch(8)\n"
           "model net(x: f32[2]) -> f32[1] { x | dense(1) }\n"
           "train t = { data = data\n model = net(x)\n loss = mse(y)\n optimizer = sgd(lr = 0.01)\n steps = 1 }\n";
  };
  write_file(d / "ok.pipe", spec_with(""));
  auto t = run_pipec({"run", (d / "ok.pipe").string(), "--save", (d / "w.safetensors").string(), "--quiet"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // A servable one first: its request is `value`, range's field.
  auto ok = run_pipec({"build", (d / "ok.pipe").string(), "--train", "t", "--weights", (d / "w.safetensors").string(),
                       "-o", (d / "lib/libok.so").string()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("inputs value: i64"), std::string::npos) << ok.err;

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  | filter(r => r.y > 3.0)\n", "bad.pipe:3:5: `filter` changes which examples the model sees"},
      {"  | map(r => { x: r.x + random_uniform([2]), y: r.y })\n", "bad.pipe:3:25: `random_uniform` draws random"},
  };
  for (const auto& [stage, want] : cases) {
    write_file(d / "bad.pipe", spec_with(stage));
    auto b = run_pipec({"build", (d / "bad.pipe").string(), "--train", "t", "--weights", (d / "w.safetensors").string(),
                        "-o", (d / "lib/libbad.so").string()});
    EXPECT_EQ(b.exit_code, 1) << stage;
    EXPECT_NE(b.err.find("train `t` cannot be served"), std::string::npos) << b.err;
    EXPECT_NE(b.err.find(want), std::string::npos) << b.err;
  }
}

// A served mixed-precision model rounds its parameters once, when loaded (fold_parameter_casts): the
// chess net's eight casts (four kernels, four biases) leave the graph, the weights become 16-bit values,
// and the output is bit for bit the unfolded graph's, for bf16 and fp16, at one example and at 64.
TEST(ServeFoldParameterCasts, RoundsTheWeightsOnceWithTheSameOutputs) {
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    const std::string spec =
        std::string(R"(source s = tfrecord("x.tfrecord") { board: f32[8, 8, 24], flags: f32[10], score: f32[1] }
pipeline data = s | batch(64, drop_remainder = true)
model chess_net(board: f32[8, 8, 24], flags: f32[10]) -> f32[1] {
  x = board | conv2d(64, 3, padding = same) | relu | conv2d(64, 3, padding = same) | relu
  x = concat([flatten(x), flags])
  x | dense(256) | relu | dense(1) | tanh
}
train t = { data = data, model = chess_net(board, flags), loss = mse(score), optimizer = adam(), steps = 1, validation = data, precision = )") +
        precision + " }\n";
    ScratchDir d;
    write_file(d / "s.pipe", spec);
    CompileRequest request;
    request.path = (d / "s.pipe").string();
    request.target = CompileTarget::Train;
    CompileResult r = compile(request);
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_TRUE(r.trains[0].program.eval);
    const ModelGraph& original = r.trains[0].program.eval->graph;
    ReferenceExecutor<float> init(original, 3);  // initial weights as training starts from
    FlatBuffers<float> weights = init.buffers();
    ModelGraph folded = original;
    FlatBuffers<float> rounded = weights;
    EXPECT_EQ(fold_parameter_casts(folded, rounded), 8);
    EXPECT_EQ(folded.nodes.size() + 8, original.nodes.size());
    EXPECT_TRUE(verify_model_graph(folded).empty()) << verify_model_graph(folded).front();
    EXPECT_NE(rounded.params, weights.params);
    for (float w : rounded.params) {
      const float again = std::string(precision) == "mixed_bf16" ? bf16_bits_to_float(float_to_bf16_bits(w))
                                                                 : half_bits_to_float(float_to_half_bits(w));
      ASSERT_EQ(std::bit_cast<uint32_t>(w), std::bit_cast<uint32_t>(again)) << w << " is not a 16-bit value";
    }
    for (int64_t rows : {1, 64}) {
      std::vector<Tensor> inputs;
      for (size_t k = 0; k < original.inputs.size(); ++k)
        inputs.push_back(testing::random_tensor(DType::F32, original.full_shape(original.inputs[k], rows), 10 + k));
      std::vector<std::vector<float>> outputs;
      for (auto [g, w] :
           {std::pair<const ModelGraph*, FlatBuffers<float>*>{&original, &weights}, {&folded, &rounded}}) {
        FastExecutorOptions o;
        o.constant_weights = true;
        FastExecutor ex(*g, 0, o);
        ex.buffers() = *w;
        ex.run(inputs, nullptr, 0, OpCategory::Forward);
        const Tensor out = ex.host_value(g->output);
        outputs.emplace_back(out.data<float>(), out.data<float>() + out.num_elements());
      }
      ASSERT_EQ(outputs[0].size(), static_cast<size_t>(rows));
      EXPECT_EQ(std::memcmp(outputs[0].data(), outputs[1].data(), outputs[0].size() * sizeof(float)), 0)
          << rows << " rows: the folded graph computes other values";
    }
  }
}

}  // namespace
}  // namespace pipec
