// Inner loops shared by the element-wise kernels: a broadcast binary loop specialised on which operands
// walk the run (so the common cases are plain vectorizable array loops) and integer helpers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/ops/broadcast.h"

namespace pipec {

/// Unsigned type wide enough to do T's arithmetic without promotion surprises (u16*u16 overflowing int)
/// or signed-overflow UB; results are truncated back to T, which gives two's-complement wrap-around.
template <class T, bool kSmall = (sizeof(T) < 4)>
struct WideU {
  using type = uint32_t;
};
template <class T>
struct WideU<T, false> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using wide_u = typename WideU<T>::type;

/// out[i] = f(a[i], b[i]) over a broadcast plan (operand 0 = out, 1 = a, 2 = b).
template <class A, class B, class R, class F>
void binary_loop(const BroadcastPlan& p, const A* a, const B* b, R* out, F f) {
  p.for_each([&](const BroadcastPlan::Offsets& off, int64_t n) {
    R* o = out + off[0];
    const A* pa = a + off[1];
    const B* pb = b + off[2];
    if (p.inner_stride[1] && p.inner_stride[2]) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], pb[i]);
    } else if (p.inner_stride[1]) {
      const B vb = pb[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], vb);
    } else if (p.inner_stride[2]) {
      const A va = pa[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(va, pb[i]);
    } else {
      const R v = f(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    }
  });
}

/// out[i] = f(a[i], b[i], c[i]) over a broadcast plan (operand 0 = out).
template <class A, class B, class C, class R, class F>
void ternary_loop(const BroadcastPlan& p, const A* a, const B* b, const C* c, R* out, F f) {
  p.for_each([&](const BroadcastPlan::Offsets& off, int64_t n) {
    R* o = out + off[0];
    const A* pa = a + off[1];
    const B* pb = b + off[2];
    const C* pc = c + off[3];
    const int64_t sa = p.inner_stride[1], sb = p.inner_stride[2], sc = p.inner_stride[3];
    if (sa && sb && sc) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], pb[i], pc[i]);
    } else if (sa && !sb && !sc) {  // x against scalar bounds (clip) or cond with scalar branches
      const B vb = pb[0];
      const C vc = pc[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], vb, vc);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i * sa], pb[i * sb], pc[i * sc]);
    }
  });
}

}  // namespace pipec
