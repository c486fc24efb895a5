// pipec.Tensor: one field of a batch, a view of the runtime's buffer offered through DLPack
// (__dlpack__ / __dlpack_device__), so torch.from_dlpack, jax.dlpack.from_dlpack and np.from_dlpack
// take it without a copy.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "runtime/capi/pipe.h"

namespace pipec::python {

class PyTensor {
 public:
  /// Takes ownership of `t` (released when the Python object goes).
  explicit PyTensor(DLManagedTensor* t) : t_(t) {}
  PyTensor(PyTensor&& o) noexcept : t_(o.t_) { o.t_ = nullptr; }
  PyTensor(const PyTensor&) = delete;
  PyTensor& operator=(const PyTensor&) = delete;
  ~PyTensor();

  const DLTensor& dl() const { return t_->dl_tensor; }
  /// A PyCapsule named "dltensor" holding a new DLManagedTensor over the same data (each consumer
  /// owns what it is given); released by the capsule when no consumer took it.
  nanobind::object dlpack_capsule() const;

 private:
  DLManagedTensor* t_;
};

/// numpy's name for a DLPack dtype ("float32", "bfloat16", ...).
std::string numpy_dtype_name(const DLDataType& d);

void bind_tensor(nanobind::module_& m);

}  // namespace pipec::python
