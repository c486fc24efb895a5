// The cast kernel: every numeric dtype to every other, with the semantics documented in
// dtype_dispatch.h (truncation toward zero, saturation and NaN -> 0 for float -> int, wrap-around for
// int -> int, round-to-nearest-even into f16/bf16).
#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"

namespace pipec {

Tensor cast_tensor(const Tensor& x, DType to) {
  if (x.dtype() == to) return x;
  if (x.dtype() == DType::Bytes || to == DType::Bytes)
    throw OpError(fmt::format("cannot cast {} to {}", dtype_name(x.dtype()), dtype_name(to)));
  Tensor out = Tensor::empty(to, x.shape());
  const int64_t n = x.num_elements();
  visit_numeric(x.dtype(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    visit_numeric(to, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* p = x.data<S>();
      D* o = out.data<D>();
      for (int64_t i = 0; i < n; ++i) o[i] = convert<D>(p[i]);
    });
  });
  return out;
}

namespace {

Tensor cast_kernel(const KernelArgs& a) { return cast_tensor(a.in.at(0), a.out_dtype()); }

}  // namespace

void register_cast(KernelTable& t) { t.set(OpKind::Cast, cast_kernel); }

}  // namespace pipec
