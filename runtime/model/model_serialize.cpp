#include "runtime/model/model_serialize.h"

#include <type_traits>

#include <fmt/format.h>

namespace pipec {

namespace {

constexpr char kMagic[8] = {'P', 'I', 'P', 'E', 'M', 'O', 'D', 'L'};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// ---- one attribute field, by its C++ type (model_attrs.def's field types) ----

template <class T>
void write_field(BlobWriter& w, const T& v) {
  if constexpr (std::is_same_v<T, int64_t>) w.i64(v);
  else if constexpr (std::is_same_v<T, double>) w.f64(v);
  else if constexpr (std::is_same_v<T, bool>) w.u8(v ? 1 : 0);
  else if constexpr (std::is_same_v<T, Flag>) w.u8(v.set ? 1 : 0);
  else if constexpr (std::is_same_v<T, Pair>) {
    w.i64(v[0]);
    w.i64(v[1]);
  } else if constexpr (std::is_enum_v<T>) w.str(enum_text(v));  // by spelling: the order may change
  else if constexpr (IsOptional<T>::value) {
    w.u8(v ? 1 : 0);
    if (v) write_field(w, *v);
  } else {  // a nested attribute struct (an optimizer's schedule)
    for_each_attr(v, [&](const char*, const auto& field) { write_field(w, field); });
  }
}

template <class T>
void read_field(BlobReader& r, T& v, const char* name) {
  if constexpr (std::is_same_v<T, int64_t>) v = r.i64(name);
  else if constexpr (std::is_same_v<T, double>) v = r.f64(name);
  else if constexpr (std::is_same_v<T, bool>) v = r.flag(name);
  else if constexpr (std::is_same_v<T, Flag>) v.set = r.flag(name);
  else if constexpr (std::is_same_v<T, Pair>) {
    v[0] = r.i64(name);
    v[1] = r.i64(name);
  } else if constexpr (std::is_enum_v<T>) {
    const std::string text = r.str(name);
    std::optional<T> e = enum_from_text<T>(text);
    if (!e) r.fail(fmt::format("attribute `{}` has the unknown value `{}`", name, text));
    v = *e;
  } else if constexpr (IsOptional<T>::value) {
    if (r.flag(name)) {
      typename T::value_type inner{};
      read_field(r, inner, name);
      v = inner;
    } else {
      v.reset();
    }
  } else {
    for_each_attr(v, [&](const char* field_name, auto& field) { read_field(r, field, field_name); });
  }
}

// ---- the graph ----

void write_ids(BlobWriter& w, const std::vector<int>& ids) {
  w.u64(ids.size());
  for (int id : ids) w.i32(id);
}

void write_value(BlobWriter& w, const GraphValue& v) {
  w.u8(kTagGraphValue);
  w.str(v.name);
  w.u8(static_cast<uint8_t>(v.dtype));
  w.u64(v.shape.size());
  for (int64_t d : v.shape) w.i64(d);
  w.u8(v.batched ? 1 : 0);
  w.u8(static_cast<uint8_t>(v.role));
  w.i64(v.offset);
  w.u8(static_cast<uint8_t>(v.init));
  w.i64(v.fan_in);
  w.i64(v.fan_out);
  w.i32(v.grad_of);
}

void write_node(BlobWriter& w, const GraphNode& n) {
  w.u8(kTagGraphNode);
  w.str(model_op_name(n.op));  // by name, as a plan's instruction ops
  write_ids(w, n.inputs);
  write_ids(w, n.outputs);
  w.u8(kTagAttrs);
  w.str(attrs_name(n.attrs));
  std::visit([&](const auto& a) { for_each_attr(a, [&](const char*, const auto& field) { write_field(w, field); }); },
             n.attrs);
  w.u8(n.fn ? 1 : 0);
  if (n.fn) w.function(*n.fn);
  w.u8(n.native ? 1 : 0);
  if (n.native) w.native(*n.native);
  w.str(n.layer);
  w.loc(n.loc);
  w.u8(static_cast<uint8_t>(n.phase));
  w.i32(n.forward);
}

// An id list whose entries are -1 (none) or values of the graph; `allow_none` for param_grads.
std::vector<int> read_ids(BlobReader& r, const char* what, size_t limit, bool allow_none = false) {
  const uint64_t n = r.count(4, what);
  std::vector<int> ids;
  ids.reserve(n);
  for (uint64_t k = 0; k < n; ++k) {
    const int32_t id = r.i32(what);
    if ((id < 0 && !(allow_none && id == -1)) || (id >= 0 && static_cast<size_t>(id) >= limit))
      r.fail(fmt::format("{} names %{}, not one of the graph's {} values", what, id, limit));
    ids.push_back(id);
  }
  return ids;
}

// The most elements one value of a model may hold per example (2^40: 4 TiB of fp32).
constexpr int64_t kMaxModelElements = int64_t{1} << 40;

// One of the graph's values, or -1 when `allow_none`.
int read_id(BlobReader& r, const char* what, size_t limit, bool allow_none) {
  const int32_t id = r.i32(what);
  if ((id < 0 && !(allow_none && id == -1)) || (id >= 0 && static_cast<size_t>(id) >= limit))
    r.fail(fmt::format("{} names %{}, not one of the graph's {} values", what, id, limit));
  return id;
}

template <class E>
E read_small_enum(BlobReader& r, E last, const char* what) {
  const uint8_t v = r.u8(what);
  if (v > static_cast<uint8_t>(last)) r.fail(fmt::format("unknown {} code {}", what, v));
  return static_cast<E>(v);
}

GraphValue read_value(BlobReader& r) {
  r.tag(kTagGraphValue, "graph value");
  GraphValue v;
  v.name = r.str("value name");
  v.dtype = r.dtype();
  const uint64_t rank = r.count(8, "value shape");
  // Every consumer multiplies the dimensions (buffer sizes, the verifier's tiling of the parameter
  // buffer): a corrupt dimension must fail here, not overflow there.
  int64_t elements = 1;
  for (uint64_t k = 0; k < rank; ++k) {
    const int64_t d = r.i64("dimension");
    if (d < kUnknownDim || d > kMaxModelElements) r.fail(fmt::format("bad dimension {}", d));
    if (d > 0 && elements > kMaxModelElements / d)
      r.fail(fmt::format("a value of more than {} elements per example", kMaxModelElements));
    if (d > 0) elements *= d;
    v.shape.push_back(d);
  }
  v.batched = r.flag("batched flag");
  v.role = read_small_enum(r, ValueRole::Gradient, "value role");
  v.offset = r.i64("buffer offset");
  v.init = read_small_enum(r, Init::Ones, "initializer");
  v.fan_in = r.i64("fan in");
  v.fan_out = r.i64("fan out");
  v.grad_of = r.i32("gradient of");
  return v;
}

GraphNode read_node(BlobReader& r, size_t values, size_t index) {
  r.tag(kTagGraphNode, "graph node");
  GraphNode n;
  const std::string op = r.str("node kind");
  if (std::optional<ModelOp> k = parse_model_op(op)) n.op = *k;
  else r.fail(fmt::format("unknown node kind `{}`", op));
  n.inputs = read_ids(r, "node input", values);
  n.outputs = read_ids(r, "node output", values);
  r.tag(kTagAttrs, "node attributes");
  n.attrs = default_attrs(n.op);
  const std::string attrs = r.str("attribute struct");
  if (attrs != attrs_name(n.attrs))
    r.fail(fmt::format("node #{} ({}) holds {}, not {}", index, op, attrs, attrs_name(n.attrs)));
  std::visit([&](auto& a) { for_each_attr(a, [&](const char* name, auto& field) { read_field(r, field, name); }); },
             n.attrs);
  if (r.flag("function present")) n.fn = r.function();
  if (r.flag("native kernel present")) n.native = r.native();
  n.layer = r.str("layer name");
  n.loc = r.loc();
  n.phase = read_small_enum(r, OpCategory::Update, "phase");
  n.forward = r.i32("forward node");
  if (n.forward < -1 || n.forward >= static_cast<int>(index))
    r.fail(fmt::format("node #{} belongs to node #{}, not an earlier node", index, n.forward));
  return n;
}

}  // namespace

std::string encode_model_graph(const ModelGraph& g) {
  BlobWriter w;
  w.str(g.name);
  w.i64(g.batch);
  w.u64(g.values.size());
  for (const GraphValue& v : g.values) write_value(w, v);
  w.u64(g.nodes.size());
  for (const GraphNode& n : g.nodes) write_node(w, n);
  write_ids(w, g.inputs);
  w.u64(g.input_fields.size());
  for (const std::string& f : g.input_fields) w.str(f);
  w.i32(g.output);
  w.str(enum_text(g.precision));
  w.i32(g.target);
  w.str(g.target_field);
  w.i32(g.loss);
  write_ids(w, g.params);
  write_ids(w, g.param_grads);
  write_ids(w, g.states);
  w.u8(kTagEnd);
  return frame_blob(kMagic, kModelFormatVersion, w.out);
}

ModelGraph decode_model_graph(std::string_view blob, const std::string& source) {
  const std::string_view payload = unframe_blob(blob, kMagic, kModelFormatVersion, source, "model");
  BlobReader r(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), source, "model");
  r.set_begin();
  ModelGraph g;
  g.name = r.str("model name");
  g.batch = r.i64("batch");
  const uint64_t nvalues = r.count(30, "values");
  g.values.reserve(nvalues);
  for (uint64_t k = 0; k < nvalues; ++k) g.values.push_back(read_value(r));
  const size_t values = g.values.size();
  const uint64_t nnodes = r.count(30, "nodes");
  g.nodes.reserve(nnodes);
  for (uint64_t k = 0; k < nnodes; ++k) g.nodes.push_back(read_node(r, values, k));
  g.inputs = read_ids(r, "model input", values);
  const uint64_t nfields = r.count(8, "input fields");
  for (uint64_t k = 0; k < nfields; ++k) g.input_fields.push_back(r.str("input field"));
  g.output = read_id(r, "model output", values, true);
  const std::string precision = r.str("precision");
  if (std::optional<Precision> p = enum_from_text<Precision>(precision)) g.precision = *p;
  else r.fail(fmt::format("unknown precision `{}`", precision));
  g.target = read_id(r, "loss target", values, true);
  g.target_field = r.str("target field");
  g.loss = read_id(r, "loss", values, true);
  g.params = read_ids(r, "parameter", values);
  g.param_grads = read_ids(r, "parameter gradient", values, true);
  g.states = read_ids(r, "state", values);
  r.tag(kTagEnd, "end of model");
  if (r.left() != 0) r.fail(fmt::format("{} bytes after the end of the model", r.left()));
  if (std::vector<std::string> problems = verify_model_graph(g); !problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += "\n  " + p;
    throw BlobDecodeError(fmt::format("{}: the model graph does not verify:{}", source, all));
  }
  return g;
}

}  // namespace pipec
