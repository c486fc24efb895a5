#include "runtime/train/dnnl/activation.h"

#include <cmath>

#include <fmt/format.h>

namespace pipec::train {

bool Activation::derivative_from_output() const {
  switch (kind) {
    case ActivationKind::Relu:
    case ActivationKind::Tanh:
    case ActivationKind::Sigmoid: return true;
    case ActivationKind::LeakyRelu: return alpha >= 0;  // the sign of y is the sign of x
    default: return false;
  }
}

float Activation::apply(float x) const {
  switch (kind) {
    case ActivationKind::None: return x;
    case ActivationKind::Relu: return x > 0 ? x : 0.0f;
    case ActivationKind::LeakyRelu: return x > 0 ? x : alpha * x;
    case ActivationKind::Tanh: return std::tanh(x);
    case ActivationKind::Sigmoid: return 1 / (1 + std::exp(-x));
    case ActivationKind::GeluErf: return 0.5f * x * (1 + std::erf(x / std::sqrt(2.0f)));
    case ActivationKind::GeluTanh: {
      const float c = std::sqrt(2 / static_cast<float>(M_PI));
      return 0.5f * x * (1 + std::tanh(c * (x + 0.044715f * x * x * x)));
    }
  }
  return x;
}

std::string Activation::name() const {
  switch (kind) {
    case ActivationKind::None: return "none";
    case ActivationKind::Relu: return "relu";
    case ActivationKind::LeakyRelu: return fmt::format("leaky_relu({})", alpha);
    case ActivationKind::Tanh: return "tanh";
    case ActivationKind::Sigmoid: return "sigmoid";
    case ActivationKind::GeluErf: return "gelu";
    case ActivationKind::GeluTanh: return "gelu_tanh";
  }
  return "?";
}

}  // namespace pipec::train
