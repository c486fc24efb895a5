// Whole models against Keras over many steps (tests/conformance/fixtures/train_steps/, made by
// make_train_fixtures.py): the chess net of examples/chess and a small net with every layer kind, from
// the same starting weights on the same 20 batches (both made by the formula of train_formula.h), with
// sgd + momentum, adam and adamw: the output, the loss and every gradient on the first batch, the loss of
// every step, and every weight and moving statistic after the 20 steps agree to 1e-5 relative to the
// tensor's largest magnitude in fp32. The PyTorch fixture (make_train_torch_fixtures.py) holds one SGD
// step of the chess net written in PyTorch, its weights converted to pipec's layouts (OIHW -> HWIO,
// [out, in] -> [in, out], the first dense kernel's rows from NCHW to NHWC flatten order): the same model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/train_formula.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> trajectory_fixtures() {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(fs::path(PIPEC_SOURCE_DIR) / "tests/conformance/fixtures/train_steps"))
    if (e.path().extension() == ".safetensors") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, int64_t> strides_of(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ';'))
    if (auto eq = item.find('='); eq != std::string::npos) out[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  return out;
}

class Fixture {
 public:
  explicit Fixture(const fs::path& path)
      : f_(read_safetensors(path.string())), strides_(strides_of(f_.metadata["strides"])) {
    rtol_ = std::stod(f_.metadata.at("rtol"));
    atol_ = std::stod(f_.metadata.at("atol"));
  }
  const SafetensorsFile& file() const { return f_; }

  // Every element of `got` (every k-th when the fixture kept every k-th) within atol + rtol * max|want|.
  void expect_close(const std::string& key, const float* got, int64_t n) const {
    auto it = f_.tensors.find(key);
    if (it == f_.tensors.end()) {
      ADD_FAILURE() << "the fixture has no tensor " << key;
      return;
    }
    const std::vector<float>& want = it->second.data;
    const int64_t k = strides_.count(key) ? strides_.at(key) : 1;
    ASSERT_EQ(static_cast<int64_t>(want.size()), (n + k - 1) / k) << key;
    double scale = 0;
    for (float v : want) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    const double limit = atol_ + rtol_ * scale;
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      double diff = std::fabs(static_cast<double>(got[i * k]) - want[i]);
      worst = std::max(worst, diff);
      if (!(diff <= limit) && bad++ < 3)
        ADD_FAILURE() << key << "[" << i * k << "]: pipec " << got[i * k] << ", expected " << want[i] << " (limit "
                      << limit << ")";
    }
    if (bad) ADD_FAILURE() << key << ": " << bad << " of " << want.size() << " elements off, worst by " << worst;
  }

 private:
  SafetensorsFile f_;
  std::map<std::string, int64_t> strides_;
  double rtol_ = 0, atol_ = 0;
};

TEST(TrainTrajectory, FixturesExist) {
  std::set<std::string> names;
  for (const fs::path& p : trajectory_fixtures()) names.insert(p.stem().string());
  for (const char* model : {"chess", "every_layer"})
    for (const char* opt : {"sgd_momentum", "adam", "adamw"})
      EXPECT_TRUE(names.count(std::string(model) + "_" + opt)) << model << "_" << opt;
  EXPECT_TRUE(names.count("chess_torch_sgd_momentum"));
}

// Follows the fixture at `path` on the executor make(graph) gives: the first step's output, loss and
// gradients, every step's loss and the weights after the last, each within the fixture's tolerance.
template <class Make>
void follow_fixture(const fs::path& path, Make make) {
  {
    SCOPED_TRACE(path.filename().string());
    Fixture fx(path);
    const SafetensorsFile& f = fx.file();
    SCOPED_TRACE(f.metadata.at("description"));
    const int steps = std::stoi(f.metadata.at("steps"));
    const int classes = std::stoi(f.metadata.at("classes"));
    TrainProgram t = testing::compile_train(f.metadata.at("spec"));
    const ModelGraph& g = t.step;
    ASSERT_FALSE(g.nodes.empty());
    ASSERT_NE(g.batch, kUnknownDim);
    auto executor = make(g);
    auto& ex = *executor;
    auto& buf = ex.buffers();
    for (int p : g.params)
      testing::formula_values(g.values[p].name, g.values[p].shape, buf.params.data() + g.values[p].offset);
    for (int s : g.states)
      testing::formula_values(g.values[s].name, g.values[s].shape, buf.states.data() + g.values[s].offset);
    auto batch = [&](int step, std::vector<Tensor>& inputs, Tensor& target) {
      inputs.clear();
      for (size_t k = 0; k < g.input_fields.size(); ++k) {
        Shape shape = g.values[g.inputs[k]].shape;
        shape.insert(shape.begin(), g.batch);
        inputs.push_back(testing::formula_batch(g.input_fields[k], step, shape));
      }
      Shape ts = g.values[g.target].shape;
      ts.insert(ts.begin(), g.batch);
      target = testing::formula_target(step, ts, classes);
    };
    std::vector<Tensor> inputs;
    Tensor target;
    batch(0, inputs, target);
    std::vector<float> losses;
    losses.push_back(static_cast<float>(ex.run(inputs, &target, 0, OpCategory::Loss)));
    const Tensor& out = ex.value(g.output);
    fx.expect_close("expect:output", out.data<float>(), out.num_elements());
    fx.expect_close("expect:loss", losses.data(), 1);
    ex.resume(0, OpCategory::Backward);
    // Under mixed_fp16 the backward pass differentiates the scaled loss (the update unscales); the
    // fixture holds Keras' unscaled gradients.
    const double grad_scale = ex.loss_scale() ? ex.loss_scale()->scale : 1.0;
    EXPECT_EQ(grad_scale != 1.0, f.metadata.count("precision") && f.metadata.at("precision") == "mixed_fp16");
    for (int p : g.params) {
      std::vector<float> grad(buf.grads.begin() + g.values[p].offset,
                              buf.grads.begin() + g.values[p].offset + g.values[p].elements_per_example());
      for (float& v : grad) v = static_cast<float>(v / grad_scale);
      fx.expect_close("expect:grad:" + g.values[p].name, grad.data(), g.values[p].elements_per_example());
    }
    ex.resume(0, OpCategory::Update);
    for (int s = 1; s < steps; ++s) {
      batch(s, inputs, target);
      losses.push_back(static_cast<float>(ex.run(inputs, &target, static_cast<uint64_t>(s), OpCategory::Update)));
    }
    if (f.tensors.count("expect:losses"))
      fx.expect_close("expect:losses", losses.data(), static_cast<int64_t>(losses.size()));
    for (int p : g.params)
      fx.expect_close("expect:after:" + g.values[p].name, buf.params.data() + g.values[p].offset,
                      g.values[p].elements_per_example());
    for (int s : g.states)
      fx.expect_close("expect:after:" + g.values[s].name, buf.states.data() + g.values[s].offset,
                      g.values[s].elements_per_example());
  }
}

TEST(TrainTrajectory, MatchesKerasAndPyTorchOverEveryStep) {
  for (const fs::path& path : trajectory_fixtures())
    follow_fixture(path, [](const ModelGraph& g) { return std::make_unique<ReferenceExecutor<float>>(g, 0); });
}

// Keras' mixed_bfloat16 fixtures on the fast executor with the layers on oneDNN's bf16 kernels (what CPUs
// with AVX512_BF16 run), within the same tolerance as the reference.
TEST(TrainTrajectory, Bf16KernelsMatchKerasMixedBfloat16) {
  if (!train::CpuKernels::bf16_kernels_exist())
    GTEST_SKIP() << "oneDNN has no bf16 kernels for this CPU (" << train::CpuKernels::isa() << ")";
  int followed = 0;
  for (const fs::path& path : trajectory_fixtures()) {
    if (SafetensorsFile f = read_safetensors(path.string());
        !f.metadata.count("precision") || f.metadata.at("precision") != "mixed_bf16")
      continue;
    ++followed;
    follow_fixture(path, [](const ModelGraph& g) {
      FastExecutorOptions o;
      o.threads = 2;
      o.cpu_bf16 = CpuBf16::Native;
      auto ex = std::make_unique<FastExecutor>(g, 0, o);
      EXPECT_TRUE(ex->bf16_kernels());
      return ex;
    });
  }
  EXPECT_GT(followed, 0) << "no mixed_bf16 fixture";
}

}  // namespace
}  // namespace pipec
