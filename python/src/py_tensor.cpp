#include "python/src/py_tensor.h"

#include <string>

#include <nanobind/stl/string.h>

#include "runtime/capi/dlpack_export.h"

namespace nb = nanobind;

namespace pipec::python {

namespace {

const char* const kCapsuleName = "dltensor";
const char* const kUsedCapsuleName = "used_dltensor";

// Runs when the capsule goes. A consumer that took the tensor renamed the capsule "used_dltensor" and
// calls the deleter itself; otherwise the tensor is still ours to release.
void release_unconsumed(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (t && t->deleter) t->deleter(t);
}

}  // namespace

std::string numpy_dtype_name(const DLDataType& d) {
  switch (d.code) {
    case kDLBool: return "bool";
    case kDLInt: return "int" + std::to_string(d.bits);
    case kDLUInt: return "uint" + std::to_string(d.bits);
    case kDLFloat: return "float" + std::to_string(d.bits);
    case kDLBfloat: return "bfloat16";
  }
  return "unknown";
}

namespace {

nb::tuple shape_tuple(const DLTensor& t) {
  nb::list dims;
  for (int32_t i = 0; i < t.ndim; ++i) dims.append(t.shape[i]);
  return nb::tuple(dims);
}

int64_t num_elements(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

}  // namespace

PyTensor::~PyTensor() {
  if (t_ && t_->deleter) t_->deleter(t_);
}

nb::object PyTensor::dlpack_capsule() const {
  DLManagedTensor* shared = share_exported(t_);
  PyObject* capsule = PyCapsule_New(shared, kCapsuleName, release_unconsumed);
  if (!capsule) {
    shared->deleter(shared);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

void bind_tensor(nb::module_& m) {
  (void)kUsedCapsuleName;
  nb::class_<PyTensor>(m, "Tensor",
                       "One field of a batch: a view of the pipeline's buffer, read without a copy through\n"
                       "DLPack (torch.from_dlpack, jax.dlpack.from_dlpack, np.from_dlpack). Treat it as\n"
                       "read-only: a cache() stage hands the same buffer out again in later epochs.")
      .def(
          "__dlpack__",
          [](const PyTensor& self, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
            // The data is on the CPU: there is no stream to synchronize with.
            if (!dl_device.is_none()) {
              auto dev = nb::cast<nb::tuple>(dl_device);
              if (nb::cast<int>(dev[0]) != kDLCPU)
                throw nb::buffer_error("pipec tensors are on the CPU; no copy to another device");
            }
            if (!copy.is_none() && nb::cast<bool>(copy))
              throw nb::buffer_error("pipec tensors are exported without a copy (copy=True)");
            return self.dlpack_capsule();
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "A PyCapsule holding a DLManagedTensor over this tensor's data (DLPack 0.8, no copy).")
      .def(
          "__dlpack_device__",
          [](const PyTensor& self) {
            return nb::make_tuple(int(self.dl().device.device_type), self.dl().device.device_id);
          },
          "(device type, device id): (1, 0), the CPU.")
      .def_prop_ro(
          "shape", [](const PyTensor& self) { return shape_tuple(self.dl()); }, "The dimensions, batch first.")
      .def_prop_ro(
          "dtype", [](const PyTensor& self) { return numpy_dtype_name(self.dl().dtype); },
          "numpy's name for the dtype.")
      .def_prop_ro("ndim", [](const PyTensor& self) { return self.dl().ndim; })
      .def_prop_ro("nbytes",
                   [](const PyTensor& self) { return num_elements(self.dl()) * ((self.dl().dtype.bits + 7) / 8); })
      .def_prop_ro(
          "device", [](const PyTensor& self) { return self.dl().device.device_type == kDLCUDA ? "cuda" : "cpu"; },
          "Where the data is: \"cpu\".")
      .def(
          "numpy", [](nb::handle self) { return nb::module_::import_("numpy").attr("from_dlpack")(self); },
          "The data as a numpy array (no copy; bfloat16 needs ml_dtypes).")
      .def(
          "__array__",
          [](nb::handle self, nb::handle dtype, nb::handle copy) {
            nb::object np = nb::module_::import_("numpy");
            nb::object a = np.attr("from_dlpack")(self);
            if (!dtype.is_none()) a = a.attr("astype")(dtype, nb::arg("copy") = false);
            if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
            return a;
          },
          nb::arg("dtype") = nb::none(), nb::kw_only(), nb::arg("copy") = nb::none())
      .def("__len__",
           [](const PyTensor& self) {
             if (self.dl().ndim == 0) throw nb::type_error("len() of a 0-d tensor");
             return self.dl().shape[0];
           })
      .def("__repr__", [](const PyTensor& self) {
        std::string dims;
        for (int32_t i = 0; i < self.dl().ndim; ++i) dims += (i ? ", " : "") + std::to_string(self.dl().shape[i]);
        return "pipec.Tensor(shape=[" + dims + "], dtype=" + numpy_dtype_name(self.dl().dtype) + ")";
      });
}

}  // namespace pipec::python
