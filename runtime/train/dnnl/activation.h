// The element-wise activations the kernels know: applied alone (EltwiseOp) or fused after a conv or
// dense layer's bias (a oneDNN post-op).
#pragma once

#include <string>

namespace pipec::train {

enum class ActivationKind { None, Relu, LeakyRelu, Tanh, Sigmoid, GeluErf, GeluTanh };

struct Activation {
  ActivationKind kind = ActivationKind::None;
  float alpha = 0;  // leaky_relu's slope below zero (Keras' LeakyReLU default is 0.2)

  static Activation none() { return {}; }
  static Activation relu() { return {ActivationKind::Relu, 0}; }
  static Activation leaky_relu(float alpha) { return {ActivationKind::LeakyRelu, alpha}; }
  static Activation tanh() { return {ActivationKind::Tanh, 0}; }
  static Activation sigmoid() { return {ActivationKind::Sigmoid, 0}; }
  static Activation gelu() { return {ActivationKind::GeluErf, 0}; }  // exact, as the language's gelu
  static Activation gelu_tanh() { return {ActivationKind::GeluTanh, 0}; }

  /// Whether the derivative can be computed from the output alone (relu, leaky_relu with alpha > 0,
  /// tanh, sigmoid). Only then can a layer fuse the activation forward and still be differentiated
  /// without keeping the pre-activation: gelu cannot.
  bool derivative_from_output() const;
  std::string name() const;
  /// The activation of one value (where a kernel computes no post-op: conv2d_transpose's output rows
  /// that no window reaches hold the bias alone, activated).
  float apply(float x) const;
};

}  // namespace pipec::train
