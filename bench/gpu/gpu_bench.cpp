// bench/gpu: the physical limits of the GPU link and memory, and the generated chess kernel against them.
//
//   gpu_bench [--spec examples/chess/chess.pipe] [--rows 65536] [--iters 20]
//   gpu_bench --info     # the libraries found and their versions, the GPU; exit code 2 without one
//
// Prints one line per figure ("name value unit"), which tests/gpu/run.sh puts in its table:
//   h2d_pinned_gbs   cuMemcpyHtoDAsync from pinned memory (the PCIe/NVLink-C2C limit)
//   h2d_pageable_gbs the same from ordinary memory (what staging saves us from)
//   d2h_pinned_gbs   cuMemcpyDtoHAsync into pinned memory (where a GPU map's results come back)
//   d2d_gbs          cuMemcpyDtoDAsync, counting bytes read plus bytes written (the HBM limit)
//   kernel_gbs       the generated kernel of the spec's first map on device-resident rows, bytes read
//                    plus written per second
//   executor_gbs     GpuMapExecutor on host chunks (copy in, compute, copy out, overlapped), input bytes/s
//   executor_copy_limit  the executor's time against its copies at the measured link speeds: the larger
//                    of input bytes / h2d_pinned and output bytes / d2h_pinned (the two directions
//                    overlap), divided by the time it took; 1.0 is as fast as the link allows
// Exit code 2 with the reason when there is no GPU.
#include <chrono>
#include <cstring>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/compile/compile.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/gpu_map_executor.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/gpu/ptx_cache.h"

using namespace pipec;
using namespace pipec::gpu;
using namespace pipec::cuda;

namespace {

const CudaDriver* D = nullptr;

/// Seconds per call of `body` on `stream`, from events around `iters` calls after one warm-up.
template <class F>
double time_on(CUstream stream, int iters, F&& body) {
  CUevent a, b;
  D->check(D->cuEventCreate(&a, 0), "cuEventCreate");
  D->check(D->cuEventCreate(&b, 0), "cuEventCreate");
  body();
  D->check(D->cuEventRecord(a, stream), "cuEventRecord");
  for (int i = 0; i < iters; ++i) body();
  D->check(D->cuEventRecord(b, stream), "cuEventRecord");
  D->check(D->cuEventSynchronize(b), "cuEventSynchronize");
  float ms = 0;
  D->check(D->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
  D->cuEventDestroy(a);
  D->cuEventDestroy(b);
  return ms / 1e3 / iters;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace

/// What tests/gpu/run.sh prints first: which driver and NVRTC the loaders found, their versions, and
/// the GPU. Works without a GPU (says why there is none).
int print_info() {
  std::string why;
  const CudaDriver* d = cuda_driver(&why);
  if (d) {
    int v = 0;
    d->cuDriverGetVersion(&v);
    std::cout << fmt::format("driver_library {}\n", d->library);
    std::cout << fmt::format("driver_cuda_version {}.{}\n", v / 1000, v % 1000 / 10);
    std::cout << fmt::format("device {} sm_{} {} SMs\n", d->device_name, d->arch, d->multiprocessors);
  } else {
    std::cout << fmt::format("driver none: {}\n", why);
  }
  std::string nvrtc_why;
  if (const Nvrtc* n = Nvrtc::get(&nvrtc_why)) {
    std::cout << fmt::format("nvrtc_library {}\n", n->library());
    std::cout << fmt::format("nvrtc_version {}\n", n->version());
  } else {
    std::cout << fmt::format("nvrtc none: {}\n", nvrtc_why);
  }
  return d ? 0 : 2;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--info") return print_info();
  std::string spec = "examples/chess/chess.pipe";
  int64_t rows = 65536;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--spec") spec = argv[i + 1];
    else if (a == "--rows") rows = std::stoll(argv[i + 1]);
    else if (a == "--iters") iters = std::stoi(argv[i + 1]);
  }
  std::string why;
  D = cuda_driver(&why);
  if (!D) {
    std::cerr << "gpu_bench: no GPU: " << why << "\n";
    return 2;
  }
  try {
    D->make_current();
    std::cout << fmt::format("device {} sm_{} {} SMs\n", D->device_name, D->arch, D->multiprocessors);
    CUstream s;
    D->check(D->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    const size_t big = size_t{256} << 20;
    void* pinned = nullptr;
    D->check(D->cuMemHostAlloc(&pinned, big, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
    std::memset(pinned, 1, big);
    std::vector<char> pageable(big, 1);
    CUdeviceptr d0, d1;
    D->check(D->cuMemAlloc(&d0, big), "cuMemAlloc");
    D->check(D->cuMemAlloc(&d1, big), "cuMemAlloc");
    double t = time_on(s, iters, [&] { D->check(D->cuMemcpyHtoDAsync(d0, pinned, big, s), "H2D"); });
    std::cout << fmt::format("h2d_pinned_gbs {:.2f} GB/s\n", big / t / 1e9);
    const double h2d_pinned = big / t;
    t = time_on(s, 3, [&] { D->check(D->cuMemcpyHtoDAsync(d0, pageable.data(), big, s), "H2D"); });
    std::cout << fmt::format("h2d_pageable_gbs {:.2f} GB/s\n", big / t / 1e9);
    const double h2d = h2d_pinned;
    t = time_on(s, iters, [&] { D->check(D->cuMemcpyDtoHAsync(pinned, d0, big, s), "D2H"); });
    std::cout << fmt::format("d2h_pinned_gbs {:.2f} GB/s\n", big / t / 1e9);
    const double d2h = big / t;
    t = time_on(s, iters, [&] { D->check(D->cuMemcpyDtoDAsync(d1, d0, big, s), "D2D"); });
    std::cout << fmt::format("d2d_gbs {:.2f} GB/s\n", 2.0 * big / t / 1e9);

    // The spec's first map, compiled as the runtime would.
    // The first pipeline as lowered (the benchmark emits its first map's kernel itself).
    CompileRequest request;
    request.path = spec;
    request.target = CompileTarget::EveryPipeline;
    request.options.passes.opt_level = 0;
    CompileResult compiled = compile(request);
    if (!compiled.ok()) {
      compiled.program->diags.print(std::cerr, false);
      std::cerr << compiled.error << "\n";
      return 1;
    }
    Plan& plan = compiled.pipelines[0].plan;
    int stage = -1;
    for (size_t i = 0; i < plan.stages.size() && stage < 0; ++i)
      if (plan.stages[i].kind == StageKind::Map) stage = static_cast<int>(i);
    if (stage < 0) throw std::runtime_error("the spec has no map");
    const Stage& st = plan.stages[stage];
    const auto& in_fields = plan.stages.at(st.inputs[0]).element.fields;
    std::vector<std::string> names;
    for (const Field& f : in_fields) names.push_back(f.name);
    auto emitted = cuda_codegen::emit_cuda_map(*st.fn, names, "pipec_bench_map");
    if (!emitted.kernel) throw std::runtime_error("the map has no CUDA lowering: " + emitted.error);
    const Nvrtc* nvrtc = Nvrtc::get(&why);
    if (!nvrtc) throw std::runtime_error(why);
    CachedPtx ptx = compile_ptx_cached(*nvrtc, emitted.kernel->source, "bench.cu", D->arch, exact_math_options());
    if (!ptx.result.ok) throw std::runtime_error(ptx.result.log);
    std::cout << fmt::format("nvrtc_compile_ms {:.1f} ms{}\n", ptx.compile_ms, ptx.from_cache ? " (cached)" : "");
    CUmodule mod;
    CUfunction fn;
    D->check(D->cuModuleLoadData(&mod, ptx.result.ptx.c_str()), "cuModuleLoadData");
    D->check(D->cuModuleGetFunction(&fn, mod, "pipec_bench_map"), "cuModuleGetFunction");

    std::vector<GpuColumnSpec> ins, outs;
    std::vector<CUdeviceptr> dev;
    size_t row_in = 0, row_out = 0;
    for (int f : emitted.kernel->input_fields) {
      const Type& ty = *in_fields.at(f).type;
      ins.push_back({ty.dtype, ty.shape});
      row_in += numel(ty.shape) * dtype_size(ty.dtype);
    }
    for (const Field& f : st.element.fields) {
      outs.push_back({f.type->dtype, f.type->shape});
      row_out += numel(f.type->shape) * dtype_size(f.type->dtype);
    }
    for (auto* specs : {&ins, &outs})
      for (const GpuColumnSpec& c : *specs) {
        CUdeviceptr p;
        D->check(D->cuMemAlloc(&p, rows * numel(c.shape) * dtype_size(c.dtype) + 1), "cuMemAlloc");
        dev.push_back(p);
      }
    int64_t first = 0, epoch = 0;
    uint64_t seed = 0;
    std::vector<void*> params;
    for (CUdeviceptr& p : dev) params.push_back(&p);
    params.push_back(&rows);
    params.push_back(&first);
    params.push_back(&epoch);
    params.push_back(&seed);
    int64_t total = 0;
    for (const GpuColumnSpec& c : outs) total += rows * numel(c.shape);
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, D->multiprocessors * 32));
    t = time_on(s, iters, [&] {
      D->check(D->cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, s, params.data(), nullptr), "cuLaunchKernel");
    });
    std::cout << fmt::format("kernel_gbs {:.2f} GB/s ({} rows, {} B in + {} B out per row, {:.3f} ms)\n",
                             rows * (row_in + row_out) / t / 1e9, rows, row_in, row_out, t * 1e3);
    std::cout << fmt::format("kernel_rows_per_s {:.0f} rows/s\n", rows / t);

    // The executor on host chunks of 4096 rows, as a pipeline feeds it.
    GpuMapExecutor exec(*D, *emitted.kernel, ins, outs, 3);
    const int64_t chunk_rows = 4096;
    Chunk in;
    in.rows = chunk_rows;
    for (size_t f = 0; f < in_fields.size(); ++f) {
      Column c;
      std::vector<int64_t> shape{chunk_rows};
      shape.insert(shape.end(), in_fields[f].type->shape.begin(), in_fields[f].type->shape.end());
      c.dense = Tensor::zeros(in_fields[f].type->dtype == DType::Bytes ? DType::U8 : in_fields[f].type->dtype, shape);
      in.columns.push_back(std::move(c));
    }
    // A warm-up round first: the pinned blocks the results land in are allocated on first use
    // (cuMemHostAlloc, milliseconds each) and recycled after; a pipeline pays that once per run.
    for (int k = 0; k < 2 * static_cast<int>(exec.depth()); ++k) {
      if (!exec.can_submit()) exec.collect();
      exec.submit(in, 0);
    }
    while (exec.has_pending()) exec.collect();
    const int chunks = 200;
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < chunks; ++k) {
      if (!exec.can_submit()) exec.collect();
      in.first_index = k * chunk_rows;
      exec.submit(in, 0);
    }
    while (exec.has_pending()) exec.collect();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << fmt::format("executor_gbs {:.2f} GB/s (input bytes; {:.0f} rows/s)\n",
                             chunks * chunk_rows * row_in / secs / 1e9, chunks * chunk_rows / secs);
    const double copies = std::max(chunks * chunk_rows * row_in / h2d, chunks * chunk_rows * row_out / d2h);
    std::cout << fmt::format(
        "executor_copy_limit {:.2f} ({:.1f} ms for the copies at link speed, {:.1f} ms taken; "
        "pinned blocks allocated {})\n",
        copies / secs, copies * 1e3, secs * 1e3, exec.pinned().allocations());
    D->cuModuleUnload(mod);
    for (CUdeviceptr p : dev) D->cuMemFree(p);
    D->cuMemFree(d0);
    D->cuMemFree(d1);
    D->cuMemFreeHost(pinned);
  } catch (const std::exception& e) {
    std::cerr << "gpu_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
