#include "runtime/train/gpu/gpu_kernel_claim.h"

#include <stdexcept>

namespace pipec::gpu {

// An exhaustive switch: a kind added to model_ops.def does not compile until it is decided here, and
// the coverage test then runs its cases through the executor.
NodeKernel node_kernel_of(ModelOp op) {
  switch (op) {
    case ModelOp::Expr: return NodeKernel::Generated;
    case ModelOp::OptimizerStep: return NodeKernel::Optimizer;
    case ModelOp::Conv2d:
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTranspose:
    case ModelOp::Conv2dTransposeBackwardInput:
    case ModelOp::Conv2dTransposeBackwardKernel: return NodeKernel::Cudnn;
    case ModelOp::Dense:
    case ModelOp::DenseBackwardInput:
    case ModelOp::DenseBackwardKernel: return NodeKernel::CublasLt;
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d:
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool:
    case ModelOp::Upsample2d:
    case ModelOp::LeakyRelu:
    case ModelOp::Gelu:
    case ModelOp::Softmax:
    case ModelOp::BatchNorm:
    case ModelOp::LayerNorm:
    case ModelOp::Dropout:
    case ModelOp::Loss:
    case ModelOp::BiasBackward:
    case ModelOp::MaxPool2dBackward:
    case ModelOp::AvgPool2dBackward:
    case ModelOp::GlobalAvgPoolBackward:
    case ModelOp::GlobalMaxPoolBackward:
    case ModelOp::Upsample2dBackward:
    case ModelOp::LeakyReluBackward:
    case ModelOp::GeluBackward:
    case ModelOp::SoftmaxBackward:
    case ModelOp::BatchNormBackward:
    case ModelOp::LayerNormBackward:
    case ModelOp::DropoutBackward:
    case ModelOp::LossBackward:
    case ModelOp::MovingAverage:
    case ModelOp::Round:
    case ModelOp::Embedding:
    case ModelOp::EmbeddingBackward: return NodeKernel::StepKernels;
  }
  throw std::logic_error("gpu executor: a node kind outside model_ops.def");
}

}  // namespace pipec::gpu
