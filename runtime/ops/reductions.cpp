// Reductions over element axes: sum, mean, prod, reduce_max, reduce_min, argmax; and size.
//
// Accumulation: floats in f64 (then rounded once to the result dtype), integers in 64-bit wrap-around
// arithmetic (then truncated to the result dtype, which equals wrapping in it); mean of integers is
// computed in f64 and returned as f32. max/min propagate NaN; over zero elements they give the identity
// (-inf / lowest integer for max, +inf / highest for min, like TensorFlow); mean of nothing is NaN;
// argmax returns the first maximum (the first NaN if there is one) and fails on an empty axis.
#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

// The input viewed as [outer, n, inner] with the reduced axes as the middle block.
struct ReducePlan {
  Tensor x;
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};

ReducePlan plan_reduce(const KernelArgs& a, bool single_axis_default_last) {
  ReducePlan p;
  p.x = a.in.at(0);
  const Shape s = p.x.shape();  // a copy: p.x may be replaced by its permutation
  const int64_t rank = p.x.rank(), er = rank - a.lead;
  std::vector<int64_t> axes;
  if (find_attr(a.instr, "axis")) {
    for (int64_t ax : attr_ints(a.instr, "axis")) axes.push_back(normalize_axis(ax, er) + a.lead);
  } else if (single_axis_default_last) {
    if (er < 1) throw OpError("needs a tensor of rank 1 or more");
    axes.push_back(rank - 1);
  } else {
    for (int64_t d = a.lead; d < rank; ++d) axes.push_back(d);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  std::vector<bool> reduced(rank, false);
  for (int64_t ax : axes) reduced[ax] = true;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) p.out_shape.push_back(s[d]);
  bool contiguous = axes.empty() || axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (!contiguous) {  // move the reduced axes to the end
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) perm.push_back(d);
    for (int64_t ax : axes) perm.push_back(ax);
    p.x = permute(p.x, perm);
    for (int64_t d = 0; d < rank; ++d) (reduced[d] ? p.n : p.outer) *= s[d];
    return p;
  }
  int64_t first = axes.empty() ? rank : axes.front(), last = axes.empty() ? rank : axes.back() + 1;
  for (int64_t d = 0; d < first; ++d) p.outer *= s[d];
  for (int64_t d = first; d < last; ++d) p.n *= s[d];
  for (int64_t d = last; d < rank; ++d) p.inner *= s[d];
  return p;
}

// acc[o, i] = fold(step, init, x[o, :, i]).
template <class T, class A, class Step>
void reduce_loop(const T* x, const ReducePlan& p, A init, A* acc, Step step) {
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* base = x + o * p.n * p.inner;
    A* ac = acc + o * p.inner;
    if (p.inner == 1) {
      A v = init;
      for (int64_t j = 0; j < p.n; ++j) v = step(v, base[j]);
      *ac = v;
      continue;
    }
    std::fill(ac, ac + p.inner, init);
    for (int64_t j = 0; j < p.n; ++j) {
      const T* row = base + j * p.inner;
      for (int64_t i = 0; i < p.inner; ++i) ac[i] = step(ac[i], row[i]);
    }
  }
}

enum class Fold { Sum, Prod, Mean, Max, Min };

template <Fold kFold>
Tensor fold_kernel(const KernelArgs& a) {
  ReducePlan p = plan_reduce(a, false);
  if (p.x.dtype() == DType::Bytes) throw OpError("not defined for byte strings");
  const DType rt = a.out_dtype();
  Tensor out = Tensor::empty(rt, p.out_shape);
  const int64_t m = p.outer * p.inner;
  visit_numeric(p.x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = p.x.data<T>();
    if constexpr (kFold == Fold::Max || kFold == Fold::Min) {
      constexpr bool kMax = kFold == Fold::Max;
      C init;
      if constexpr (std::is_floating_point_v<C>)
        init = kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
      else init = kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
      std::unique_ptr<C[]> acc(new C[static_cast<size_t>(m)]);  // not vector<bool>
      reduce_loop(x, p, init, acc.get(), [](C best, T raw) {
        C v = load(raw);
        if constexpr (std::is_floating_point_v<C>) {
          if (best != best) return best;  // NaN sticks
          if (v != v) return v;
        }
        return (kMax ? v > best : v < best) ? v : best;
      });
      visit_numeric(rt, [&](auto rtag) {
        using R = typename decltype(rtag)::type;
        R* o = out.data<R>();
        for (int64_t i = 0; i < m; ++i) o[i] = convert<R>(store<T>(acc[i]));
      });
    } else {
      constexpr bool kFloatAcc = std::is_floating_point_v<C> || kFold == Fold::Mean;
      using A = std::conditional_t<kFloatAcc, double, uint64_t>;
      std::vector<A> acc(static_cast<size_t>(m));
      A init = kFold == Fold::Prod ? A(1) : A(0);
      if constexpr (kFold == Fold::Prod)
        reduce_loop(x, p, init, acc.data(), [](A s, T v) { return static_cast<A>(s * static_cast<A>(load(v))); });
      else reduce_loop(x, p, init, acc.data(), [](A s, T v) { return static_cast<A>(s + static_cast<A>(load(v))); });
      visit_numeric(rt, [&](auto rtag) {
        using R = typename decltype(rtag)::type;
        R* o = out.data<R>();
        for (int64_t i = 0; i < m; ++i) {
          if constexpr (kFold == Fold::Mean) o[i] = convert<R>(acc[i] / static_cast<double>(p.n));
          else if constexpr (kFloatAcc) o[i] = convert<R>(acc[i]);
          else o[i] = convert<R>(static_cast<int64_t>(acc[i]));
        }
      });
    }
  });
  return out;
}

Tensor argmax_kernel(const KernelArgs& a) {
  ReducePlan p = plan_reduce(a, true);
  if (p.n == 0) throw OpError("argmax of an empty axis");
  Tensor out = Tensor::empty(DType::I64, p.out_shape);
  int64_t* o = out.data<int64_t>();
  visit_numeric(p.x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = p.x.data<T>();
    for (int64_t k = 0; k < p.outer; ++k)
      for (int64_t i = 0; i < p.inner; ++i) {
        const T* base = x + k * p.n * p.inner + i;
        C best = load(base[0]);
        int64_t at = 0;
        for (int64_t j = 1; j < p.n && best == best; ++j) {
          C v = load(base[j * p.inner]);
          if (v > best || v != v) {
            best = v;
            at = j;
          }
        }
        o[k * p.inner + i] = at;
      }
  });
  return out;
}

// size(x): the number of elements; for byte strings the number of bytes (summed over the tensor).
Tensor size_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  const int64_t rows = a.lead ? a.rows : 1;
  Tensor out = Tensor::empty(DType::I64, a.lead ? Shape{rows} : Shape{});
  int64_t* o = out.data<int64_t>();
  const int64_t per_row = rows ? x.num_elements() / std::max<int64_t>(rows, 1) : 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (x.dtype() == DType::Bytes) o[r] = x.offsets()[(r + 1) * per_row] - x.offsets()[r * per_row];
    else o[r] = per_row;
  }
  return out;
}

}  // namespace

void register_reductions(KernelTable& t) {
  t.set(OpKind::Sum, fold_kernel<Fold::Sum>);
  t.set(OpKind::Prod, fold_kernel<Fold::Prod>);
  t.set(OpKind::Mean, fold_kernel<Fold::Mean>);
  t.set(OpKind::ReduceMax, fold_kernel<Fold::Max>);
  t.set(OpKind::ReduceMin, fold_kernel<Fold::Min>);
  t.set(OpKind::Argmax, argmax_kernel);
  t.set(OpKind::Size, size_kernel);
}

}  // namespace pipec
