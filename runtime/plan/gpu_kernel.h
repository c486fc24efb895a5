// A map body compiled for the GPU: the CUDA C++ source the CUDA code generator wrote for one map stage
// after `to(gpu)`, and how its parameters line up with the stage's columns. The runtime compiles the
// source with NVRTC when it finds a GPU (runtime/gpu); without one the interpreter runs the stage.
//
// The kernel's signature (the contract between compiler/codegen/cuda and runtime/gpu):
//   extern "C" __global__ void ENTRY(const T0* in0, ..., R0* out0, ..., long long rows,
//                                    long long first_index, long long epoch, unsigned long long seed)
// Input k is the dense column of input field `input_fields[k]`, row-major with rows first; output j is
// fn->results[j], allocated by the runtime with the result's static shape. Any grid size is correct
// (a grid-stride loop covers rows x elements); random ops key Philox exactly as the interpreter does.
#pragma once

#include <string>
#include <vector>

namespace pipec {

struct GpuKernel {
  std::string source;             // CUDA C++; also valid host C++ (see compiler/codegen/cuda)
  std::string entry;              // the kernel's extern "C" name
  std::vector<int> input_fields;  // per kernel input: index into the stage's input element fields
  /// Set (and source empty) when the generator could not lower the body: why, for the run's warning.
  std::string unsupported;
};

}  // namespace pipec
