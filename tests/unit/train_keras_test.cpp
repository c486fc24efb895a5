// The reference executor against Keras: every fixture in tests/conformance/fixtures/train/ (made by
// make_train_fixtures.py with real Keras) holds a pipec spec, weights, a batch, and what Keras computed:
// the model's output, the loss, every parameter's gradient, and the weights after a few optimizer steps.
// Layer outputs, losses, gradients, optimizer formulas and batch_norm's moving statistics must agree to
// within the tolerance the fixture states (pipec accumulates in f64, TensorFlow in f32).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "runtime/train/persist/safetensors.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

struct Tolerance {
  double rtol, atol;
};

// Every element within atol + rtol * (the largest magnitude of the expected tensor).
void expect_close(const std::string& what, const float* got, const SafetensorsTensor& want, Tolerance tol) {
  double scale = 0;
  for (float v : want.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  double limit = tol.atol + tol.rtol * scale;
  int reported = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double diff = std::fabs(static_cast<double>(got[i]) - want.data[i]);
    if (!(diff <= limit) && reported++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: pipec " << got[i] << ", Keras " << want.data[i] << " (limit " << limit
                    << ")";
  }
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  fs::path dir = fs::path(PIPEC_SOURCE_DIR) / "tests/conformance/fixtures/train";
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Tensor as_tensor(const SafetensorsTensor& t) {
  Tensor x = Tensor::empty(DType::F32, t.shape);
  std::copy(t.data.begin(), t.data.end(), x.data<float>());
  return x;
}

TEST(TrainKeras, FixturesExist) { EXPECT_GE(fixtures().size(), 20u); }

TEST(TrainKeras, MatchesKeras) {
  for (const fs::path& path : fixtures()) {
    SCOPED_TRACE(path.filename().string());
    try {
      SafetensorsFile f = read_safetensors(path.string());
      const std::string& spec = f.metadata.at("spec");
      SCOPED_TRACE(f.metadata["description"] + "\n" + spec);
      Tolerance tol{std::stod(f.metadata.at("rtol")), std::stod(f.metadata.at("atol"))};
      int steps = std::stoi(f.metadata.at("steps"));
      TrainProgram t = testing::compile_train(spec);
      const ModelGraph& g = t.step;
      ASSERT_FALSE(g.nodes.empty());
      ReferenceExecutor<float> ex(g, 0);
      auto& buf = ex.buffers();
      auto tensor = [&](const std::string& name) -> const SafetensorsTensor& {
        auto it = f.tensors.find(name);
        if (it == f.tensors.end()) throw std::runtime_error("the fixture has no tensor " + name);
        return it->second;
      };
      for (int p : g.params) {
        const SafetensorsTensor& w = tensor(g.values[p].name);
        ASSERT_EQ(w.shape, g.values[p].shape) << g.values[p].name;
        std::copy(w.data.begin(), w.data.end(), buf.params.begin() + g.values[p].offset);
      }
      for (int s : g.states) {
        const SafetensorsTensor& w = tensor(g.values[s].name);
        std::copy(w.data.begin(), w.data.end(), buf.states.begin() + g.values[s].offset);
      }
      std::vector<Tensor> inputs;
      for (const std::string& field : g.input_fields) inputs.push_back(as_tensor(tensor("input:" + field)));
      Tensor target = as_tensor(tensor("target"));
      // Before any step: output, loss, gradients.
      double loss = ex.run(inputs, &target, 0, OpCategory::Loss);
      const Tensor& out = ex.value(g.output);
      ASSERT_EQ(out.num_elements(), static_cast<int64_t>(tensor("expect:output").data.size()));
      expect_close("output", out.data<float>(), tensor("expect:output"), tol);
      float l = static_cast<float>(loss);
      expect_close("loss", &l, tensor("expect:loss"), tol);
      ex.resume(0, OpCategory::Backward);
      for (int p : g.params)
        expect_close("gradient of " + g.values[p].name, buf.grads.data() + g.values[p].offset,
                     tensor("expect:grad:" + g.values[p].name), tol);
      // Steps on the same batch: parameters and moving statistics.
      ex.resume(0, OpCategory::Update);
      for (int s = 1; s < steps; ++s) ex.run(inputs, &target, static_cast<uint64_t>(s), OpCategory::Update);
      for (int p : g.params)
        expect_close("after the steps, " + g.values[p].name, buf.params.data() + g.values[p].offset,
                     tensor("expect:after:" + g.values[p].name), tol);
      for (int s : g.states)
        expect_close("after the steps, " + g.values[s].name, buf.states.data() + g.values[s].offset,
                     tensor("expect:after:" + g.values[s].name), tol);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

}  // namespace
}  // namespace pipec
