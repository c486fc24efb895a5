// OpContext, the one place every op makes and runs its oneDNN primitives: a call binds the caller's
// buffers, runs on the op's thread count and restores the caller's, and a oneDNN error while making or
// running a primitive is a TrainKernelError naming the op (no op's public call can provoke one, so this
// test drives the folder's private helper directly).
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {
namespace {

constexpr const char* kWhat = "relu x 4 (op context test)";

std::shared_ptr<dnnl::eltwise_forward> relu_primitive(const OpContext& ctx, const memory::desc& data) {
  return ctx.primitives<dnnl::eltwise_forward>("op context test relu", [&] {
    using namespace dnnl;
    eltwise_forward::primitive_desc pd(
        eltwise_forward::desc(prop_kind::forward_training, algorithm::eltwise_relu, data, 0.f, 0.f), ctx.engine());
    return std::make_shared<eltwise_forward>(pd);
  });
}

template <class Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const TrainKernelError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OpContext, RunBindsTheCallersBuffersOnEachCall) {
  CpuKernels k;
  OpContext ctx(k, kWhat);
  const memory::desc data = f32_desc({4}, memory::format_tag::a);
  auto relu = relu_primitive(ctx, data);
  memory src = ctx.caller_memory(data), dst = ctx.caller_memory(data);
  std::vector<float> x1{-1, 2, -3, 4}, x2{5, -6, 7, -8}, y1(4), y2(4);
  ctx.run(*relu, {{DNNL_ARG_SRC, src, x1.data()}, {DNNL_ARG_DST, dst, y1.data()}});
  ctx.run(*relu, {{DNNL_ARG_SRC, src, x2.data()}, {DNNL_ARG_DST, dst, y2.data()}});
  EXPECT_EQ(y1, (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y2, (std::vector<float>{5, 0, 7, 0}));
  // An empty memory leaves its argument out (a workspace the primitive has not).
  std::vector<float> y3(4);
  ctx.run(*relu, {{DNNL_ARG_SRC, src, x1.data()}, {DNNL_ARG_DST, dst, y3.data()}, {DNNL_ARG_WORKSPACE, memory()}});
  EXPECT_EQ(y3, y1);
}

TEST(OpContext, AOneDnnErrorWhileRunningNamesTheOp) {
  CpuKernels k;
  OpContext ctx(k, kWhat);
  const memory::desc data = f32_desc({4}, memory::format_tag::a);
  auto relu = relu_primitive(ctx, data);
  memory src = ctx.caller_memory(data);
  std::vector<float> x{-1, 2, -3, 4};
  // Without its destination, oneDNN refuses to execute the primitive.
  EXPECT_EQ(error_of([&] {
              ctx.run(*relu, {{DNNL_ARG_SRC, src, x.data()}});
            }).rfind(std::string(kWhat) + ": oneDNN cannot do it (invalid arguments: ", 0),
            0u)
      << error_of([&] {
           ctx.run(*relu, {{DNNL_ARG_SRC, src, x.data()}});
         });
  // So does an error thrown inside a call's body.
  EXPECT_EQ(error_of([&] { ctx.call([](dnnl::stream&) { throw dnnl::error(dnnl_out_of_memory, "test"); }); }),
            std::string(kWhat) + ": oneDNN cannot do it (out of memory: test)");
}

TEST(OpContext, AOneDnnErrorWhileMakingThePrimitivesNamesTheOpAndCachesNothing) {
  CpuKernels k;
  OpContext ctx(k, kWhat);
  const std::string error = error_of([&] {
    ctx.primitives<dnnl::softmax_forward>("op context test softmax", [&] {
      using namespace dnnl;
      // Axis 3 of a 1-D tensor.
      const memory::desc data = f32_desc({4}, memory::format_tag::a);
      softmax_forward::primitive_desc pd(softmax_forward::desc(prop_kind::forward_training, data, 3), ctx.engine());
      return std::make_shared<softmax_forward>(pd);
    });
  });
  EXPECT_EQ(error.rfind(std::string(kWhat) + ": oneDNN cannot do it (invalid arguments: ", 0), 0u) << error;
  EXPECT_EQ(k.cached_primitive_sets(), 0u);
}

TEST(OpContext, ACallRunsOnTheOpsThreadsAndRestoresTheCallersEvenAfterAnError) {
  const int caller = omp_get_max_threads();
  const int op_threads = caller == 1 ? 2 : 1;
  CpuKernelOptions options;
  options.threads = op_threads;
  CpuKernels k(options);
  OpContext ctx(k, kWhat);
  EXPECT_EQ(ctx.threads(), op_threads);
  int inside = 0;
  ctx.call([&](dnnl::stream&) { inside = omp_get_max_threads(); });
  EXPECT_EQ(inside, op_threads);
  EXPECT_EQ(omp_get_max_threads(), caller);
  EXPECT_THROW(ctx.call([](dnnl::stream&) { throw dnnl::error(dnnl_runtime_error, "test"); }), TrainKernelError);
  EXPECT_EQ(omp_get_max_threads(), caller);
}

}  // namespace
}  // namespace pipec::train
