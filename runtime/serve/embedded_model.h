// The symbols `pipec build --train` generates into a model library, read by pipe_model_open: the served
// preprocessing plan (runtime/plan/plan_serialize.h), the inference graph (runtime/model/
// model_serialize.h), the trained weights (a safetensors file, included byte for byte) and the train
// block's name. The map kernels are runtime/capi/embedded.h's table. Declared weak, as that file's, so a
// program that links the served runtime without a generated file (the unit tests) still links, and
// pipe_model_open then says that no model is embedded.
#pragma once

#include <cstdint>

extern "C" {
extern const unsigned char pipec_embedded_serving_plan[] __attribute__((weak));
extern const uint64_t pipec_embedded_serving_plan_size __attribute__((weak));
extern const unsigned char pipec_embedded_model[] __attribute__((weak));
extern const uint64_t pipec_embedded_model_size __attribute__((weak));
extern const unsigned char pipec_embedded_weights[] __attribute__((weak));
extern const uint64_t pipec_embedded_weights_size __attribute__((weak));
extern const char pipec_embedded_train_name[] __attribute__((weak));
}
