#include "compiler/driver/library_header.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "runtime/capi/dlpack_export.h"

namespace pipec {

std::string c_identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

namespace {

std::string upper_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// The spec's path inside a C comment.
std::string comment_safe(std::string text) {
  for (size_t at = text.find("*/"); at != std::string::npos; at = text.find("*/")) text.replace(at, 2, "* /");
  return text;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = (d < 0 || n < 0) ? -1 : n * d;
  return n;
}

}  // namespace

std::string model_header_text(const Plan& serving, const ModelGraph& g, const std::string& prefix,
                              const std::string& spec, const std::string& train_name) {
  const std::string lower = c_identifier(prefix);
  const std::string upper = upper_case(lower);
  const std::vector<Field>& inputs = serving.stages.front().element.fields;
  std::string out = fmt::format(
      "/* lib{0}.h: the model of train `{1}` of {2}, as built by `pipec build --train`. Generated; do not edit.\n"
      " * The functions are pipe.h's \"Served models\". A request's input i is [rows, ...the shape below], the\n"
      " * output [rows, ...OUTPUT's shape]; -1 is a dimension of any size. */\n"
      "#ifndef LIB{3}_H\n#define LIB{3}_H\n\n#include \"pipe.h\"\n\n",
      lower, train_name, comment_safe(spec), upper);
  out += fmt::format("#define {}_TRAIN \"{}\"\n", upper, train_name);
  out += fmt::format("#define {}_NUM_INPUTS {}\n\n", upper, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Field& f = inputs[i];
    const std::string id = upper_case(c_identifier(f.name));
    out += fmt::format("/* input {}: {} */\n", f.name, type_to_string(*f.type));
    out += fmt::format("#define {}_INPUT_{} {}\n", upper, id, i);
    out += fmt::format("#define {}_INPUT_{}_NDIM {}\n", upper, id, f.type->shape.size());
    out += fmt::format("#define {}_INPUT_{}_NUMEL {}\n", upper, id, numel(f.type->shape));
  }
  const GraphValue& o = g.values[g.output];
  out += fmt::format("\n/* output: {}{} */\n", dtype_name(o.dtype), shape_to_string(o.shape));
  out += fmt::format("#define {}_OUTPUT_NDIM {}\n", upper, o.shape.size());
  out += fmt::format("#define {}_OUTPUT_NUMEL {}\n", upper, numel(o.shape));
  out += "\n#endif\n";
  return out;
}

std::string library_header_text(const Plan& plan, const std::string& prefix, const std::string& spec) {
  const ElementInfo& e = plan.stages.back().element;
  std::string lower = c_identifier(prefix);
  std::string upper = lower;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  size_t max_rank = 1;
  for (const Field& f : e.fields) max_rank = std::max(max_rank, f.type->shape.size());

  std::string spec_text = spec;
  for (size_t at = spec_text.find("*/"); at != std::string::npos; at = spec_text.find("*/"))
    spec_text.replace(at, 2, "* /");
  std::string out = fmt::format(
      "/* lib{0}.h: the output of pipeline `{1}` of {2}, as built by `pipec build`. Generated; do not edit.\n"
      " * The functions are in pipe.h. Shapes include the batch dimension when the pipeline batches;\n"
      " * -1 is a dimension known only at run time (a last, smaller batch or a variable-length field). */\n"
      "#ifndef LIB{3}_H\n#define LIB{3}_H\n\n#include \"pipe.h\"\n\n",
      lower, plan.name, spec_text, upper);
  out += fmt::format("#define {}_PIPELINE \"{}\"\n", upper, plan.name);
  out += fmt::format("#define {}_NUM_FIELDS {}\n", upper, e.fields.size());
  out += fmt::format("#define {}_BATCH_RANK {}\n", upper, e.batch_rank);
  out += fmt::format("#define {}_MAX_RANK {}\n\n", upper, max_rank);
  for (size_t i = 0; i < e.fields.size(); ++i) {
    const Field& f = e.fields[i];
    std::string id = c_identifier(f.name);
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::toupper(c); });
    out += fmt::format("/* {}: {} */\n", f.name, type_to_string(*f.type));
    out += fmt::format("#define {}_FIELD_{} {}\n", upper, id, i);
    out += fmt::format("#define {}_FIELD_{}_NDIM {}\n", upper, id, f.type->shape.size());
    int64_t n = 1;
    for (int64_t d : f.type->shape) n = (d < 0 || n < 0) ? -1 : n * d;
    out += fmt::format("#define {}_FIELD_{}_NUMEL {}\n", upper, id, n);
  }
  out += fmt::format(
      "\ntypedef struct {0}_field_desc {{\n"
      "  const char* name;\n  const char* dtype;     /* \"f32\", \"i64\", ... */\n"
      "  DLDataType dl_dtype;\n  int32_t ndim;\n  int64_t shape[{1}_MAX_RANK];\n}} {0}_field_desc;\n\n",
      lower, upper);
  out += fmt::format("static const {0}_field_desc {0}_fields[{1}_NUM_FIELDS] = {{\n", lower, upper);
  for (const Field& f : e.fields) {
    DLDataType dt = dlpack_dtype(f.type->dtype).value_or(DLDataType{0, 0, 0});
    std::string dims;
    for (int64_t d : f.type->shape) dims += fmt::format("{}{}", dims.empty() ? "" : ", ", d < 0 ? -1 : d);
    if (dims.empty()) dims = "0";
    out += fmt::format("  {{\"{}\", \"{}\", {{{}, {}, {}}}, {}, {{{}}}}},\n", f.name, dtype_name(f.type->dtype),
                       dt.code, dt.bits, dt.lanes, f.type->shape.size(), dims);
  }
  out += "};\n\n#endif\n";
  return out;
}

}  // namespace pipec
