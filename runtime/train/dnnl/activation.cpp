#include "runtime/train/dnnl/activation.h"

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
