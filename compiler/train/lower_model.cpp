// A checked model body -> the forward graph of the model IR.
//
// Statements are lowered in order. A layer application (`x | conv2d(...)`, `dense(x, 10)`) becomes a
// layer node with its parameters; relu, tanh, sigmoid, add, flatten and concat become expr nodes of one
// instruction; any other expression (arithmetic, ops, fn calls) becomes one expr node whose function is
// lowered by the pipeline lowering itself (lower_model_expression), with the graph values it reads
// (model inputs, earlier statements, layer results) as its parameters. A model used as a layer (a block,
// `x | res_block(times = 6)`) is lowered by lowering its body again for each use, its inputs bound to
// values of this graph. Nodes nothing reads are removed, then parameters are named (a block's inside the
// block's name) and laid out in the flat buffer in node order.
#include "compiler/train/lower_model.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "compiler/lower/lower.h"
#include "compiler/sema/builtins.h"
#include "compiler/train/layer_parts.h"

namespace pipec {

SpecLoc spec_location(const Program& program, SourceRange r) {
  if (!r.valid()) return {};
  const SourceFile& f = program.sources.file(r.file);
  LineCol lc = f.line_col(r.begin);
  return SpecLoc{f.path(), lc.line, lc.col};
}

namespace {

// A layer's parameter before it is named: the node it feeds and the name after the layer's ("kernel").
struct PendingParam {
  int value;
  std::string suffix;
};

// A layer with weights, or a block (a model used as a layer) holding the layers of one use.
struct LayerRecord {
  int node;            // a layer's node; -1 for a block
  const Stmt* stmt;    // the statement it was written in, or null (the model's result expression)
  std::string prefix;  // Keras' name for the layer kind: "conv2d", "dense", "batch_normalization"; a block's model name
  std::vector<PendingParam> params;
  std::vector<LayerRecord> children;  // a block's layers and blocks, named inside the block's name
};

// A model used as a layer: `x | block`, `block(x, y)`, `x | block(times = n)`.
struct BlockCall {
  const Decl* model = nullptr;
  std::vector<const Expr*> inputs;
  int64_t times = 1;
};

// What the lowering of a model and of the blocks it uses build together.
struct GraphUnderConstruction {
  ModelGraph g;
  std::vector<SourceRange> ranges;  // per node
  int64_t dropout_streams = 0;
};

// A layer call with its arguments bound to the builtin's parameters (the piped value is `x`).
struct LayerCall {
  const Builtin* builtin = nullptr;
  std::vector<const Expr*> args;  // one per builtin.params entry, null when absent
  const Expr* whole = nullptr;    // the expression whose type is the layer's result
};

Value default_value(const std::string& text) {
  char* end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return Value::make_int(i);
  double f = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return Value::make_float(f);
  return Value::make_symbol(text);
}

class ModelLowering {
 public:
  ModelLowering(const Program& program, const Decl& model, GraphUnderConstruction& out, Diagnostics& diags)
      : program_(program),
        model_(model),
        diags_(diags),
        g_(out.g),
        ranges_(out.ranges),
        dropout_streams_(out.dropout_streams) {}

  // The whole model: its inputs become graph inputs; then dead nodes go and parameters are named.
  bool run() {
    for (const Param& p : model_.params) {
      GraphValue v;
      v.name = p.name;
      auto dt = parse_dtype(p.type.name);
      v.dtype = dt ? *dt : DType::F32;
      for (const DimSyntax& d : p.type.dims) {
        int64_t size = d.kind == DimSyntax::Known ? d.value : kUnknownDim;
        if (d.kind == DimSyntax::Named)
          if (const Decl* c = program_.global(d.name); c && c->value && c->value->constant)
            size = c->value->constant->i;
        v.shape.push_back(size);
      }
      if (!Type::tensor(v.dtype, v.shape).fully_known()) {
        diags_.report(
            DiagKind::unsupported_in_model, p.type.range,
            fmt::format("model input `{}` needs a fully known shape: the model is compiled for static shapes", p.name));
        ok_ = false;
      }
      v.role = ValueRole::Input;
      int id = g_.add_value(v);
      g_.inputs.push_back(id);
      inputs_[p.name] = id;
    }
    if (!ok_) return false;
    g_.output = lower_body();
    if (!ok_) return false;
    remove_dead_nodes();
    name_parameters();
    return ok_;
  }

  // One use of the model as a block: its inputs are values of the graph being built.
  int lower_use(const std::vector<int>& inputs) {
    for (size_t i = 0; i < model_.params.size() && i < inputs.size(); ++i) inputs_[model_.params[i].name] = inputs[i];
    return lower_body();
  }

  bool ok() const { return ok_; }
  std::vector<LayerRecord>& layers() { return layers_; }

 private:
  int lower_body() {
    const auto& body = *model_.value->as<BlockExpr>();
    for (const Stmt& s : body.stmts) {
      if (s.value->constant) continue;  // a constant: its uses are lowered as constants
      current_stmt_ = &s;
      locals_[&s] = value_of(*s.value);
      current_stmt_ = nullptr;
      if (!ok_) return -1;
    }
    return value_of(*body.result);
  }

  // ---- which expressions are layers ------------------------------------------------------------------

  std::optional<BlockCall> as_block(const Expr& e) const {
    const NameExpr* callee = nullptr;
    const CallExpr* call = nullptr;
    BlockCall bc;
    if (e.kind == ExprKind::Call) {
      call = e.as<CallExpr>();
      if (call->callee->kind == ExprKind::Name) callee = call->callee->as<NameExpr>();
    } else if (e.kind == ExprKind::Pipe) {
      const auto& p = *e.as<PipeExpr>();
      bc.inputs.push_back(p.lhs.get());
      if (p.rhs->kind == ExprKind::Call) {
        call = p.rhs->as<CallExpr>();
        if (call->callee->kind == ExprKind::Name) callee = call->callee->as<NameExpr>();
      } else if (p.rhs->kind == ExprKind::Name) {
        callee = p.rhs->as<NameExpr>();
      }
    }
    if (!callee || callee->target.kind != Binding::Global || !callee->target.decl ||
        callee->target.decl->kind != DeclKind::Model)
      return std::nullopt;
    bc.model = callee->target.decl;
    if (call)
      for (const Arg& a : call->args) {
        if (a.name.empty()) bc.inputs.push_back(a.value.get());
        else if (a.name == "times" && a.value->constant) bc.times = a.value->constant->i;
      }
    return bc;
  }

  std::optional<LayerCall> as_layer(const Expr& e) const {
    const NameExpr* callee = nullptr;
    const CallExpr* call = nullptr;
    const Expr* piped = nullptr;
    if (e.kind == ExprKind::Call) {
      call = e.as<CallExpr>();
      if (call->callee->kind == ExprKind::Name) callee = call->callee->as<NameExpr>();
    } else if (e.kind == ExprKind::Pipe) {
      const auto& p = *e.as<PipeExpr>();
      piped = p.lhs.get();
      if (p.rhs->kind == ExprKind::Call) {
        call = p.rhs->as<CallExpr>();
        if (call->callee->kind == ExprKind::Name) callee = call->callee->as<NameExpr>();
      } else if (p.rhs->kind == ExprKind::Name) {
        callee = p.rhs->as<NameExpr>();
      }
    }
    if (!callee || callee->target.kind != Binding::Builtin) return std::nullopt;
    const Builtin* b = find_builtin(callee->name, {BuiltinKind::Layer});
    if (!b) return std::nullopt;
    LayerCall lc;
    lc.builtin = b;
    lc.whole = &e;
    lc.args.assign(b->params.size(), nullptr);
    size_t next = 0;
    if (piped) lc.args[next++] = piped;
    if (call)
      for (const Arg& a : call->args) {
        if (a.name.empty()) {
          if (next < lc.args.size()) lc.args[next++] = a.value.get();
          continue;
        }
        for (size_t i = 0; i < b->params.size(); ++i)
          if (b->params[i].name == a.name) lc.args[i] = a.value.get();
      }
    return lc;
  }

  // ---- values ----------------------------------------------------------------------------------------

  int value_of(const Expr& e) {
    if (auto lc = as_layer(e)) return lower_layer(*lc);
    if (auto bc = as_block(e)) return lower_block(*bc);
    if (e.kind == ExprKind::Name && !e.constant) {
      const auto& n = *e.as<NameExpr>();
      if (n.target.kind == Binding::Local && n.target.stmt) {
        auto it = locals_.find(n.target.stmt);
        if (it != locals_.end()) return it->second;
      }
      if (n.target.kind == Binding::Param) {
        auto it = inputs_.find(n.name);
        if (it != inputs_.end()) return it->second;
      }
    }
    return lower_expression(e);
  }

  // The graph-valued parts of an expression: model inputs, statements and layer results.
  void collect_leaves(const Expr& e, std::vector<const Expr*>& out) {
    if (e.constant && e.type.is_tensor()) return;
    if (as_layer(e) || as_block(e)) {
      out.push_back(&e);
      return;
    }
    switch (e.kind) {
      case ExprKind::Name: {
        const auto& n = *e.as<NameExpr>();
        if ((n.target.kind == Binding::Local && locals_.count(n.target.stmt)) ||
            (n.target.kind == Binding::Param && inputs_.count(n.name)))
          out.push_back(&e);
        return;
      }
      case ExprKind::Binary:
        collect_leaves(*e.as<BinaryExpr>()->lhs, out);
        collect_leaves(*e.as<BinaryExpr>()->rhs, out);
        return;
      case ExprKind::Unary: collect_leaves(*e.as<UnaryExpr>()->operand, out); return;
      case ExprKind::Index: {
        // Indices and slice bounds computed at run time read graph values too (constant ones return at once).
        const auto& ix = *e.as<IndexExpr>();
        collect_leaves(*ix.base, out);
        for (const IndexItem& item : ix.items)
          for (const ExprPtr* part : {&item.value, &item.start, &item.stop, &item.step})
            if (*part) collect_leaves(**part, out);
        return;
      }
      case ExprKind::List:
        for (const auto& item : e.as<ListExpr>()->items) collect_leaves(*item, out);
        return;
      case ExprKind::Call:
        for (const Arg& a : e.as<CallExpr>()->args) collect_leaves(*a.value, out);
        return;
      case ExprKind::Pipe: {
        const auto& p = *e.as<PipeExpr>();
        collect_leaves(*p.lhs, out);
        if (p.rhs->kind == ExprKind::Call)
          for (const Arg& a : p.rhs->as<CallExpr>()->args) collect_leaves(*a.value, out);
        return;
      }
      case ExprKind::Member: collect_leaves(*e.as<MemberExpr>()->base, out); return;
      default: return;
    }
  }

  int new_value(const Type& t) {
    GraphValue v;
    v.dtype = t.dtype;
    v.shape = t.shape;
    return g_.add_value(v);
  }

  int add_node(GraphNode n, SourceRange range) {
    n.loc = spec_location(program_, range);
    ranges_.push_back(range);
    return g_.add_node(std::move(n));
  }

  // Field names of an expr function's parameters: the value's name when it is unique there.
  static std::string field_name(const ModelGraph& g, int value, const std::set<std::string>& taken) {
    const std::string& n = g.values[value].name;
    if (!n.empty() && !taken.count(n) && n.find('/') == std::string::npos) return n;
    return fmt::format("v{}", value);
  }

  // Any expression that is not a layer: one expr node.
  int lower_expression(const Expr& e) {
    std::vector<const Expr*> leaves;
    collect_leaves(e, leaves);
    std::vector<int> inputs;
    std::map<int, int> param_of_value;
    std::map<const Expr*, int> bound;
    auto fn = std::make_shared<ExprFunction>();
    fn->name = fmt::format("expr@{}", g_.nodes.size());
    std::set<std::string> fields;
    // Values first (a leaf may itself add nodes), then the function's parameters.
    std::vector<int> leaf_values;
    for (const Expr* leaf : leaves) leaf_values.push_back(value_of(*leaf));
    if (!ok_) return -1;
    for (size_t k = 0; k < leaves.size(); ++k) {
      int v = leaf_values[k];
      auto it = param_of_value.find(v);
      if (it == param_of_value.end()) {
        std::string field = field_name(g_, v, fields);
        fields.insert(field);
        const GraphValue& gv = g_.values[v];
        int p = fn->add(Instr{OpKind::Param,
                              {},
                              {{"field", Value::make_string(field)}},
                              Type::tensor(gv.dtype, gv.shape),
                              spec_location(program_, leaves[k]->range)});
        it = param_of_value.emplace(v, p).first;
        inputs.push_back(v);
      }
      bound[leaves[k]] = it->second;
    }
    int r = lower_model_expression(program_, *fn, e, bound);
    fn->results = {{"y", r}};
    for (const Instr& in : fn->body)
      if (op_has(in.op, OpFlag::Random)) {
        diags_.report(
            DiagKind::unsupported_in_model, e.range,
            fmt::format("`{}` in a model would draw the same numbers at every step; use dropout(rate), or draw "
                        "the numbers in the pipeline",
                        op_name(in.op)));
        ok_ = false;
        return -1;
      }
    GraphNode n;
    n.op = ModelOp::Expr;
    n.inputs = inputs;
    n.fn = fn;
    int out = new_value(fn->body[r].type);
    n.outputs = {out};
    add_node(std::move(n), e.range);
    return out;
  }

  // An expr node of one instruction over graph values (the element-wise layers).
  int expr_node(OpKind op, const std::vector<int>& ins, std::map<std::string, Value> attrs, const Type& result,
                SourceRange range) {
    auto fn = std::make_shared<ExprFunction>();
    fn->name = fmt::format("expr@{}", g_.nodes.size());
    std::vector<int> params;
    std::set<std::string> fields;
    SpecLoc loc = spec_location(program_, range);
    std::map<int, int> param_of_value;
    std::vector<int> node_inputs;
    for (int v : ins) {
      if (param_of_value.count(v)) continue;
      std::string field = field_name(g_, v, fields);
      fields.insert(field);
      const GraphValue& gv = g_.values[v];
      param_of_value[v] = fn->add(
          Instr{OpKind::Param, {}, {{"field", Value::make_string(field)}}, Type::tensor(gv.dtype, gv.shape), loc});
      node_inputs.push_back(v);
    }
    std::vector<int> operands;
    for (int v : ins) {
      int p = param_of_value[v];
      // Keras casts a layer's float inputs to its compute dtype.
      if (fn->body[p].type.dtype != result.dtype)
        p = fn->add(Instr{OpKind::Cast,
                          {p},
                          {{"dtype", Value::make_symbol(std::string(dtype_name(result.dtype)))}},
                          Type::tensor(result.dtype, fn->body[p].type.shape),
                          loc});
      operands.push_back(p);
    }
    int r = fn->add(Instr{op, operands, std::move(attrs), result, loc});
    fn->results = {{"y", r}};
    GraphNode n;
    n.op = ModelOp::Expr;
    n.inputs = node_inputs;
    n.fn = fn;
    int out = new_value(result);
    n.outputs = {out};
    add_node(std::move(n), range);
    return out;
  }

  // A layer's float input in f32 (Keras casts float inputs to the layer's compute dtype).
  int as_f32(int v, SourceRange range) {
    if (g_.values[v].dtype == DType::F32) return v;
    return expr_node(OpKind::Cast, {v}, {{"dtype", Value::make_symbol("f32")}},
                     Type::tensor(DType::F32, g_.values[v].shape), range);
  }

  // Integer ids as i64 (embedding's); the checker lets only integer types through.
  int as_i64(int v, SourceRange range) {
    if (g_.values[v].dtype == DType::I64) return v;
    return expr_node(OpKind::Cast, {v}, {{"dtype", Value::make_symbol("i64")}},
                     Type::tensor(DType::I64, g_.values[v].shape), range);
  }

  // ---- layers ----------------------------------------------------------------------------------------

  bool has_param(const LayerCall& lc, const std::string& name) const {
    for (const ParamSpec& p : lc.builtin->params)
      if (p.name == name) return true;
    return false;
  }

  // The argument's value, or its default; a default naming another parameter (a pool's strides default
  // to its size) is that one's.
  Value argument_or_default(const LayerCall& lc, const std::string& name) const {
    for (size_t i = 0; i < lc.builtin->params.size(); ++i) {
      const ParamSpec& p = lc.builtin->params[i];
      if (p.name != name) continue;
      if (lc.args[i] && lc.args[i]->constant) return *lc.args[i]->constant;
      if (has_param(lc, p.default_text)) return argument_or_default(lc, p.default_text);
      return default_value(p.default_text);
    }
    throw std::logic_error("lowering: layer " + lc.builtin->name + " has no parameter " + name);
  }

  // One integer or [height, width].
  static Pair pair(const Value& v) {
    if (v.kind != Value::List) return {v.i, v.i};
    if (v.items.size() != 2) throw std::logic_error("lowering: a [height, width] argument of " + v.to_string());
    return {v.items[0].i, v.items[1].i};
  }

  static int64_t number_of(const Value& v) { return v.kind == Value::Float ? static_cast<int64_t>(v.f) : v.i; }

  int new_param(LayerRecord& rec, const std::string& suffix, Shape shape, Init init, int64_t fan_in = 0,
                int64_t fan_out = 0, bool state = false) {
    GraphValue v;
    v.shape = std::move(shape);
    v.batched = false;
    v.role = state ? ValueRole::State : ValueRole::Param;
    v.init = init;
    v.fan_in = fan_in;
    v.fan_out = fan_out;
    int id = g_.add_value(v);
    rec.params.push_back({id, suffix});
    return id;
  }

  // An element-wise layer (model_ops.def's EXPR_LAYER rows): an expr node of the one op `op`.
  int lower_expr_layer(const LayerCall& lc, OpKind op) {
    const Expr& whole = *lc.whole;
    const Type& result = whole.type;
    if (op == OpKind::Concat) {  // concat([a, b, ...], axis)
      std::vector<int> values;
      const Expr* list = lc.args[0];
      if (list && list->kind == ExprKind::List)
        for (const auto& item : list->as<ListExpr>()->items) values.push_back(value_of(*item));
      if (!ok_) return -1;
      int64_t axis = number_of(argument_or_default(lc, "axis"));
      if (axis < 0) axis += static_cast<int64_t>(result.shape.size());
      return expr_node(op, values, {{"axis", Value::make_int(axis)}}, result, whole.range);
    }
    std::vector<int> operands;  // x, then the other tensor arguments in the builtin's order (add's y)
    for (size_t i = 0; i < lc.args.size(); ++i) {
      if (!lc.args[i] || (i > 0 && !lc.args[i]->type.is_tensor())) continue;
      operands.push_back(value_of(*lc.args[i]));
      if (!ok_) return -1;
    }
    std::map<std::string, Value> attrs;
    if (op == OpKind::Reshape) {  // flatten: to one dimension
      attrs["shape"] = Value::make_list({Value::make_int(result.shape[0])});
    }
    return expr_node(op, operands, std::move(attrs), result, whole.range);
  }

  // A layer of a node kind of its own: the kind's attributes from the arguments, then the weights and
  // outputs its parts rule (compiler/train/layer_parts.h) gives.
  int lower_layer(const LayerCall& lc) {
    const std::string& name = lc.builtin->name;
    const Expr& whole = *lc.whole;
    SourceRange range = whole.range;
    const std::optional<LayerLowering> how = layer_lowering(name);
    if (how && how->expr) return lower_expr_layer(lc, *how->expr);
    const PartsRule parts_rule = layer_parts_rule(name);
    if (!how || !parts_rule) {
      diags_.report(DiagKind::unsupported_in_model, range, fmt::format("layer `{}` cannot be trained yet", name));
      ok_ = false;
      return -1;
    }
    int x = value_of(*lc.args[0]);
    if (!ok_) return -1;
    GraphNode n;
    n.op = *how->node;
    const Shape in_shape = g_.values[x].shape;
    n.attrs = attrs_from_arguments(lc, n.op, in_shape);
    // Dropout's masks: each dropout layer draws from a random stream of its own, numbered in model order.
    if (DropoutAttrs* d = std::get_if<DropoutAttrs>(&n.attrs)) d->stream = dropout_streams_++;
    const LayerParts parts = parts_rule(n, in_shape);
    x = parts.input == DType::I64 ? as_i64(x, range) : as_f32(x, range);
    LayerRecord rec{static_cast<int>(g_.nodes.size()), current_stmt_, model_op_info(n.op).keras, {}, {}};
    n.inputs = {x};
    for (const WeightPart& w : parts.weights)
      n.inputs.push_back(new_param(rec, w.name, w.shape, w.init, w.fan_in, w.fan_out, w.state));
    const int y = new_value(Type::tensor(DType::F32, whole.type.shape));
    n.outputs.push_back(y);
    for (const OutputPart& o : parts.outputs) {
      GraphValue v;
      v.shape = o.shape;
      v.batched = o.batched;
      n.outputs.push_back(g_.add_value(v));
    }
    rec.node = add_node(std::move(n), range);
    if (!rec.prefix.empty()) layers_.push_back(rec);
    return y;
  }

  // The attributes of a node of kind `op`, each field from the layer's argument of the same name (its
  // value, or its default; a default that names another argument is that argument's value). A field
  // with no argument of its name keeps its default: lowering's own (dropout's stream) or a later pass's
  // (a fused activation, the evaluation graph's inference flag).
  ModelAttrs attrs_from_arguments(const LayerCall& lc, ModelOp op, const Shape& in_shape) const {
    ModelAttrs attrs = default_attrs(op);
    size_t used = 0;
    std::visit(
        [&](auto& a) {
          for_each_attr(a, [&](const char* field_name, auto& field) {
            const std::string field_text = field_name;
            if (!has_param(lc, field_text)) return;
            ++used;
            const Value v = argument_or_default(lc, field_text);
            using T = std::decay_t<decltype(field)>;
            if constexpr (std::is_same_v<T, int64_t>) {
              field = number_of(v);
              // An axis of one example: negative counts from the end.
              if (field_text == "axis" && field < 0) field += static_cast<int64_t>(in_shape.size());
            } else if constexpr (std::is_same_v<T, double>) {
              field = v.as_double();
            } else if constexpr (std::is_same_v<T, Pair>) {
              field = pair(v);
            } else if constexpr (std::is_enum_v<T>) {
              std::optional<T> e = enum_from_text<T>(v.s);
              if (!e)
                throw std::logic_error(
                    fmt::format("lowering: layer {}'s {} is {}", lc.builtin->name, field_text, v.to_string()));
              field = *e;
            } else {
              throw std::logic_error(
                  fmt::format("lowering: layer {}'s argument {} fills an attribute of no argument type",
                              lc.builtin->name, field_text));
            }
          });
        },
        attrs);
    // Every argument after x (and add's y, an operand) is an attribute: one that were not would be lost.
    size_t arguments = 0;
    for (const ParamSpec& p : lc.builtin->params) arguments += p.name != "x" && p.name != "y";
    if (used != arguments)
      throw std::logic_error(fmt::format("lowering: {} of layer {}'s {} arguments are attributes of {}", used,
                                         lc.builtin->name, arguments, attrs_name(attrs)));
    return attrs;
  }

  // ---- blocks ----------------------------------------------------------------------------------------

  // Each use (each of `times`) lowers the block's body again, with weights of its own: a record named
  // after the model (`res_block`, `res_block_1`, ...) holding the layers of that use.
  int lower_block(const BlockCall& bc) {
    std::vector<int> inputs;
    for (const Expr* in : bc.inputs) {
      inputs.push_back(value_of(*in));
      if (!ok_) return -1;
    }
    int y = -1;
    for (int64_t k = 0; k < bc.times; ++k) {
      ModelLowering use(program_, *bc.model, g_, ranges_, dropout_streams_, diags_);
      y = use.lower_use(inputs);
      if (!use.ok()) {
        ok_ = false;
        return -1;
      }
      if (!use.layers().empty())
        layers_.push_back(LayerRecord{-1, current_stmt_, bc.model->name, {}, std::move(use.layers())});
      inputs = {y};
    }
    return y;
  }

  // ---- after lowering --------------------------------------------------------------------------------

  void remove_dead_nodes() {
    std::vector<bool> live_value(g_.values.size(), false);
    live_value[g_.output] = true;
    std::vector<bool> live_node(g_.nodes.size(), false);
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      const GraphNode& n = g_.nodes[i];
      bool live = false;
      for (int o : n.outputs) live = live || live_value[o];
      if (!live) continue;
      live_node[i] = true;
      for (int v : n.inputs) live_value[v] = true;
    }
    std::vector<int> new_index(g_.nodes.size(), -1);
    std::vector<GraphNode> nodes;
    std::vector<SourceRange> ranges;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!live_node[i]) continue;
      new_index[i] = static_cast<int>(nodes.size());
      nodes.push_back(std::move(g_.nodes[i]));
      ranges.push_back(ranges_[i]);
    }
    g_.nodes = std::move(nodes);
    ranges_ = std::move(ranges);
    keep_live_records(layers_, new_index);
  }

  // Layers whose node was removed go; so do blocks left with no layers.
  static void keep_live_records(std::vector<LayerRecord>& records, const std::vector<int>& new_index) {
    std::vector<LayerRecord> kept;
    for (LayerRecord& r : records) {
      if (r.node < 0) {
        keep_live_records(r.children, new_index);
        if (r.children.empty()) continue;
      } else {
        if (new_index[r.node] < 0) continue;
        r.node = new_index[r.node];
      }
      kept.push_back(std::move(r));
    }
    records = std::move(kept);
  }

  // Keras names layers by kind in order (`conv2d`, `conv2d_1`, ...) and variables after their layer
  // (`conv2d_1/kernel`). A statement `name = ...` holding exactly one layer with parameters names it
  // instead, when no other such statement binds the same name.
  // A block's layers are named the same way inside it, after the block's own name
  // (`res_block_1/conv2d/kernel`).
  void name_parameters() {
    int64_t param_at = 0, state_at = 0;
    name_level(layers_, "", param_at, state_at);
  }

  void name_level(const std::vector<LayerRecord>& level, const std::string& scope, int64_t& param_at,
                  int64_t& state_at) {
    std::map<std::string, int> statements_binding;
    std::map<const Stmt*, int> layers_in_stmt;
    for (const LayerRecord& r : level)
      if (r.stmt) ++layers_in_stmt[r.stmt];
    for (const auto& [stmt, count] : layers_in_stmt)
      if (count == 1) ++statements_binding[stmt->name];
    std::set<std::string> taken;
    std::vector<std::string> names(level.size());
    for (size_t i = 0; i < level.size(); ++i) {
      const LayerRecord& r = level[i];
      if (r.stmt && layers_in_stmt[r.stmt] == 1 && statements_binding[r.stmt->name] == 1) {
        names[i] = r.stmt->name;
        taken.insert(names[i]);
      }
    }
    std::map<std::string, int> counters;
    for (size_t i = 0; i < level.size(); ++i) {
      if (!names[i].empty()) continue;
      const std::string& prefix = level[i].prefix;
      std::string candidate;
      do {
        int k = counters[prefix]++;
        candidate = k == 0 ? prefix : fmt::format("{}_{}", prefix, k);
      } while (taken.count(candidate));
      names[i] = candidate;
      taken.insert(candidate);
    }
    for (size_t i = 0; i < level.size(); ++i) {
      const LayerRecord& r = level[i];
      if (r.node < 0) {
        name_level(r.children, scope + names[i] + "/", param_at, state_at);
        continue;
      }
      g_.nodes[r.node].layer = scope + names[i];
      for (const PendingParam& p : r.params) {
        GraphValue& v = g_.values[p.value];
        v.name = scope + names[i] + "/" + p.suffix;
        if (v.role == ValueRole::Param) {
          v.offset = param_at;
          param_at += v.elements_per_example();
          g_.params.push_back(p.value);
        } else {
          v.offset = state_at;
          state_at += v.elements_per_example();
          g_.states.push_back(p.value);
        }
      }
    }
  }

  ModelLowering(const Program& program, const Decl& model, ModelGraph& g, std::vector<SourceRange>& ranges,
                int64_t& dropout_streams, Diagnostics& diags)
      : program_(program), model_(model), diags_(diags), g_(g), ranges_(ranges), dropout_streams_(dropout_streams) {}

  const Program& program_;
  const Decl& model_;
  Diagnostics& diags_;
  ModelGraph& g_;
  std::vector<SourceRange>& ranges_;
  int64_t& dropout_streams_;
  std::map<const Stmt*, int> locals_;
  std::map<std::string, int> inputs_;
  std::vector<LayerRecord> layers_;
  const Stmt* current_stmt_ = nullptr;
  bool ok_ = true;
};

}  // namespace

std::optional<LoweredModel> lower_model(const Program& program, const Decl& model, int64_t batch, Diagnostics& diags) {
  GraphUnderConstruction out;
  out.g.name = model.name;
  out.g.batch = batch;
  if (!ModelLowering(program, model, out, diags).run()) return std::nullopt;
  return LoweredModel{std::move(out.g), std::move(out.ranges)};
}

}  // namespace pipec
