// EltwiseOp forward and both backward forms against the definitions, on values spanning the activations'
// interesting ranges (both signs, the saturated tails).
//
// Tolerance: oneDNN evaluates tanh, exp (sigmoid) and erf with polynomial approximations accurate to a
// few ulp; relu is exact. We allow 16 ulp of the value plus 16 u absolute (near zero crossings a few ulp
// of the inputs): a wrong alpha, a tanh-approximated gelu for the exact one (up to 5e-4 apart), or a
// derivative taken from the wrong tensor misses it by orders of magnitude.
#include "runtime/train/dnnl/eltwise.h"

#include <gtest/gtest.h>

#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

std::vector<Activation> all_activations() {
  return {Activation::relu(),    Activation::leaky_relu(0.2f), Activation::leaky_relu(0.0f), Activation::tanh(),
          Activation::sigmoid(), Activation::gelu(),           Activation::gelu_tanh()};
}

naive::Vec tolerance(const naive::Vec& want) {
  naive::Vec tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) tol[i] = 16 * test::kUnitRoundoff * (std::abs(want[i]) + 1);
  return tol;
}

TEST(Eltwise, ForwardAndBackwardMatchTheDefinitions) {
  const int64_t count = 1001;
  auto x = test::random_data(count, 91, -6, 6);
  auto dy = test::random_data(count, 92);
  for (Activation act : all_activations()) {
    SCOPED_TRACE(act.name());
    CpuKernels kernels;
    EltwiseOp op(kernels, {act, count});
    std::vector<float> y(count, NAN), dx(count, NAN);
    op.forward(x.data(), y.data());
    naive::Vec want_y(count), want_dx(count);
    for (int64_t i = 0; i < count; ++i) {
      want_y[i] = naive::activation(int(act.kind), act.alpha, x.d[i]);
      want_dx[i] = naive::activation_derivative(int(act.kind), act.alpha, x.d[i]) * dy.d[i];
    }
    test::expect_within(y, want_y, tolerance(want_y), "forward");
    op.backward_from_input(x.data(), dy.data(), dx.data());
    test::expect_within(dx, want_dx, tolerance(want_dx), "backward from the input");
    if (act.derivative_from_output()) {
      std::vector<float> dx2(count, NAN);
      op.backward_from_output(y.data(), dy.data(), dx2.data());
      // From y, the derivative inherits y's rounding: 1 - y^2 and y (1 - y) lose a little more where
      // the activation saturates, still within the same bound.
      test::expect_within(dx2, want_dx, tolerance(want_dx), "backward from the output");
    } else {
      std::vector<float> dx2(count);
      EXPECT_THROW(op.backward_from_output(y.data(), dy.data(), dx2.data()), TrainKernelError);
    }
  }
}

}  // namespace
}  // namespace pipec::train
