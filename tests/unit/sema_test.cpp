// Semantic analysis through check_text: element types of declarations, the type and binding
// annotations the language server reads from the AST, and bad input that must never crash.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "compiler/front/ast_query.h"
#include "compiler/sema/builtins.h"
#include "compiler/sema/program.h"

namespace pipec {
namespace {

std::unique_ptr<Program> check(const std::string& text) { return check_text("test.pipe", text); }

const Decl* decl(const Program& p, const std::string& name) {
  for (const auto& d : p.main().decls)
    if (d->name == name) return d.get();
  return nullptr;
}

std::string element(const Program& p, const std::string& name) {
  const Decl* d = decl(p, name);
  if (!d || d->type.kind != TypeKind::Dataset) return "<not a dataset>";
  return element_to_string(*d->type.element);
}

std::string errors(const Program& p) {
  std::string out;
  for (const auto& d : p.diags.all())
    if (d.severity == Severity::Error) out += d.message + "\n";
  return out;
}

bool has_kind(const Program& p, DiagKind kind) {
  for (const auto& d : p.diags.all())
    if (d.kind == kind) return true;
  return false;
}

// Every expression of a declaration matching `pred`, in source order.
std::vector<const Expr*> find_exprs(const Decl& d, const std::function<bool(const Expr&)>& pred) {
  std::vector<const Expr*> out;
  walk_exprs(d, [&](const Expr& e) {
    if (pred(e)) out.push_back(&e);
  });
  return out;
}

std::vector<const NameExpr*> names(const Decl& d, const std::string& name) {
  std::vector<const NameExpr*> out;
  for (const Expr* e :
       find_exprs(d, [&](const Expr& e) { return e.kind == ExprKind::Name && e.as<NameExpr>()->name == name; }))
    out.push_back(e->as<NameExpr>());
  return out;
}

TEST(Sema, ElementTypesAfterStages) {
  auto p = check(R"(
source s = tfrecord("data/*.tfrecord") { d: bytes[194], s: i64, ids: i64[?] }
pipeline a = s | map(r => { bits: unpack_bits(r.d), s: f32(r.s) })
pipeline b = a | batch(32)
pipeline c = a | batch(32, drop_remainder = true) | repeat()
pipeline d = s | padded_batch(4) | unbatch()
pipeline e = range(10) | repeat() | batch(3)
)");
  EXPECT_EQ(errors(*p), "");
  EXPECT_EQ(element(*p, "s"), "{d: u8[194], s: i64, ids: i64[?]}");
  EXPECT_EQ(element(*p, "a"), "{bits: u8[1552], s: f32}");
  EXPECT_EQ(element(*p, "b"), "{bits: u8[?, 1552], s: f32[?]} batched(1)");
  EXPECT_EQ(element(*p, "c"), "{bits: u8[32, 1552], s: f32[32]} batched(1) infinite");
  EXPECT_EQ(element(*p, "d"), "{d: u8[194], s: i64, ids: i64[?]}");
  EXPECT_EQ(element(*p, "e"), "{value: i64[3]} batched(1) infinite");
}

TEST(Sema, ChessExampleTypes) {
  auto p = check(R"(
source positions = tfrecord("data/chess-*.tfrecord") { d: bytes[194], s: i64 }
pipeline train = positions | map(r => {
    bits = unpack_bits(r.d)
    board = reshape(bits[0:1536], [8, 8, 24])
    board = f32(board[:, :, [0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23]])
    flags = f32(bits[1536:1546])
    { board, flags }
  }) | batch(512, drop_remainder = true)
)");
  EXPECT_EQ(errors(*p), "");
  EXPECT_EQ(element(*p, "train"), "{board: f32[512, 8, 8, 24], flags: f32[512, 10]} batched(1)");
}

TEST(Sema, ExpressionTypesForHover) {
  auto p = check(R"(
pipeline p = range(4) | map(r => {
    u = u8(r.value)
    half = u * 0.5
    sum = u + 1
    { half, sum, cmp: u < 3 }
  })
)");
  ASSERT_EQ(errors(*p), "");
  const Decl& d = *decl(*p, "p");
  // Every use of a binding carries its type.
  auto us = names(d, "u");
  ASSERT_EQ(us.size(), 3u);
  for (const NameExpr* u : us) EXPECT_EQ(type_to_string(u->type), "u8");
  // Binary expressions carry their promoted result.
  auto binaries = find_exprs(d, [](const Expr& e) { return e.kind == ExprKind::Binary; });
  ASSERT_EQ(binaries.size(), 3u);
  EXPECT_EQ(type_to_string(binaries[0]->type), "f32");   // u8 * 0.5
  EXPECT_EQ(type_to_string(binaries[1]->type), "u8");    // u8 + 1
  EXPECT_EQ(type_to_string(binaries[2]->type), "bool");  // u8 < 3
  // The lambda's parameter types are recorded.
  auto lambdas = find_exprs(d, [](const Expr& e) { return e.kind == ExprKind::Lambda; });
  ASSERT_EQ(lambdas.size(), 1u);
  const auto* lambda = lambdas[0]->as<LambdaExpr>();
  ASSERT_EQ(lambda->param_types.size(), 1u);
  EXPECT_EQ(type_to_string(lambda->param_types[0]), "{value: i64}");
  // The member access is typed too.
  auto members = find_exprs(d, [](const Expr& e) { return e.kind == ExprKind::Member; });
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(type_to_string(members[0]->type), "i64");
}

TEST(Sema, ConstantsAreFolded) {
  auto p = check("const N = 2 * 8\nconst M = N // 3 - 7 % 3\nconst F = f32(N) / 3\npipeline p = range(N) | batch(M)\n");
  ASSERT_EQ(errors(*p), "");
  const Decl* n = decl(*p, "N");
  ASSERT_TRUE(n->value->constant);
  EXPECT_EQ(n->value->constant->i, 16);
  EXPECT_EQ(type_to_string(n->type), "i64");
  EXPECT_EQ(decl(*p, "M")->value->constant->i, 4);
  EXPECT_EQ(type_to_string(decl(*p, "F")->type), "f32");
  EXPECT_EQ(element(*p, "p"), "{value: i64[?]} batched(1)");
  // The use of N in range(N) carries the constant as well.
  auto uses = names(*decl(*p, "p"), "N");
  ASSERT_EQ(uses.size(), 1u);
  ASSERT_TRUE(uses[0]->constant);
  EXPECT_EQ(uses[0]->constant->i, 16);
}

TEST(Sema, NamesAreBound) {
  auto p = check(R"(
const SCALE = 2.0
fn twice(x: f32) -> f32 = x * SCALE
pipeline p = range(4) | map(r => {
    v = f32(r.value)
    w = twice(v)
    { v, w: tanh(w) }
  }) | prefetch(auto)
)");
  ASSERT_EQ(errors(*p), "");
  const Decl& pd = *decl(*p, "p");
  // A local binding points at its statement.
  auto vs = names(pd, "v");
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0]->target.kind, Binding::Local);
  ASSERT_NE(vs[0]->target.stmt, nullptr);
  EXPECT_EQ(vs[0]->target.stmt->name, "v");
  // A lambda parameter.
  auto rs = names(pd, "r");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0]->target.kind, Binding::LambdaParam);
  // A global fn and a builtin op as callees, an option word as an argument.
  auto tw = names(pd, "twice");
  ASSERT_EQ(tw.size(), 1u);
  EXPECT_EQ(tw[0]->target.kind, Binding::Global);
  EXPECT_EQ(tw[0]->target.decl, decl(*p, "twice"));
  EXPECT_EQ(names(pd, "tanh")[0]->target.kind, Binding::Builtin);
  EXPECT_EQ(names(pd, "f32")[0]->target.kind, Binding::Builtin);
  EXPECT_EQ(names(pd, "auto")[0]->target.kind, Binding::Option);
  // A fn parameter and a global const inside the fn body.
  const Decl& fd = *decl(*p, "twice");
  EXPECT_EQ(names(fd, "x")[0]->target.kind, Binding::Param);
  EXPECT_EQ(names(fd, "SCALE")[0]->target.kind, Binding::Global);
  EXPECT_EQ(names(fd, "SCALE")[0]->target.decl, decl(*p, "SCALE"));
  // The shorthand field `{ v }` refers to the local `v`.
  auto records = find_exprs(pd, [](const Expr& e) { return e.kind == ExprKind::Record; });
  ASSERT_EQ(records.size(), 1u);
  const auto& fields = records[0]->as<RecordExpr>()->fields;
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].value, nullptr);
  ASSERT_NE(fields[0].shorthand_target, nullptr);
  EXPECT_EQ(fields[0].shorthand_target->kind, Binding::Local);
  EXPECT_EQ(fields[0].shorthand_target->stmt, vs[0]->target.stmt);
}

TEST(Sema, TrainBlockNamesAreFields) {
  auto p = check(R"(
source s = tfrecord("data/*.tfrecord") { x: f32[4], y: f32 }
pipeline data = s | batch(8, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam() }
)");
  ASSERT_EQ(errors(*p), "");
  const Decl& t = *decl(*p, "t");
  auto ys = names(t, "y");
  ASSERT_EQ(ys.size(), 1u);
  EXPECT_EQ(type_to_string(ys[0]->type), "f32[8]");
  EXPECT_EQ(names(t, "net")[0]->target.decl, decl(*p, "net"));
}

// The builtin the checker chose is on the name (hover reads it): a layer in a model, an op in a map body,
// an output format inside write(...), a source at the head of a pipeline.
TEST(Sema, BuiltinBindingsFollowTheContext) {
  auto p = check(R"(
source s = tfrecord("data/*.tfrecord") { x: f32[4] }
pipeline out = s | map(r => { y: relu(r.x) }) | write(tfrecord("out/*.tfrecord"))
model net(x: f32[4]) -> f32[4] { x | relu }
)");
  ASSERT_EQ(errors(*p), "");
  auto kind_of = [&](const char* d, const char* name, size_t i = 0) {
    auto ns = names(*decl(*p, d), name);
    EXPECT_GT(ns.size(), i) << name;
    const Builtin* b = ns.size() > i ? ns[i]->target.builtin : nullptr;
    return b ? std::string(builtin_kind_name(b->kind)) : std::string("none");
  };
  EXPECT_EQ(kind_of("s", "tfrecord"), "source");
  EXPECT_EQ(kind_of("out", "tfrecord"), "format");
  EXPECT_EQ(kind_of("out", "relu"), "op");
  EXPECT_EQ(kind_of("out", "map"), "stage");
  EXPECT_EQ(kind_of("out", "write"), "sink");
  EXPECT_EQ(kind_of("net", "relu"), "layer");
}

// A stage whose rule never ran (a misspelt name, a bad argument) still has its function literal checked
// against the element: its own mistakes are reported and its names typed.
TEST(Sema, LambdaOfAMisspeltStageIsCheckedAgainstTheElement) {
  auto p = check(R"(
source s = range(10)
pipeline p = s
  | map(r => { d: f32(r.value) })
  | filtr(r => r.d > 0.0 && r.nope > 1)
pipeline q = s | map(r => { e: r.value }, nonsense = 3)
)");
  EXPECT_TRUE(has_kind(*p, DiagKind::unknown_stage)) << errors(*p);
  EXPECT_TRUE(has_kind(*p, DiagKind::unknown_field)) << errors(*p);  // r.nope, inside the misspelt stage
  EXPECT_TRUE(has_kind(*p, DiagKind::unknown_argument)) << errors(*p);
  const Decl& pd = *decl(*p, "p");
  auto members =
      find_exprs(pd, [](const Expr& e) { return e.kind == ExprKind::Member && e.as<MemberExpr>()->member == "d"; });
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(type_to_string(members[0]->type), "f32");  // in filtr
  for (const NameExpr* r : names(pd, "r")) EXPECT_EQ(r->target.kind, Binding::LambdaParam);
  // A map with a bad argument.
  auto values = find_exprs(*decl(*p, "q"), [](const Expr& e) { return e.kind == ExprKind::Member; });
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(type_to_string(values[0]->type), "i64");
}

TEST(Sema, PipingIntoAFnWithoutParametersIsAnError) {
  auto p = check(R"(
fn one() -> f32 = 1.0
pipeline p = range(4) | map(r => { y: f32(r.value) | one })
)");
  EXPECT_NE(errors(*p).find("fn `one` takes no input"), std::string::npos) << errors(*p);
  EXPECT_TRUE(has_kind(*p, DiagKind::too_many_arguments));
}

// Each train entry that names a builtin takes one family: `loss = adam()` type-checks as a call but is
// not a loss.
TEST(Sema, TrainEntriesTakeTheirOwnFamily) {
  const std::string head = R"(
source s = tfrecord("data/*.tfrecord") { x: f32[4], y: f32 }
pipeline data = s | batch(8, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
)";
  auto good = check(
      head + "train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(), strategy = single() }\n");
  EXPECT_EQ(errors(*good), "");
  struct Case {
    const char* entries;
    const char* message;
  } cases[] = {
      {"loss = adam(), optimizer = adam()", "`loss` must call a loss, not the optimizer `adam`"},
      {"loss = mse(y), optimizer = mse(y)", "`optimizer` must call an optimizer, not the loss `mse`"},
      {"loss = mse(y), optimizer = adam(), strategy = sgd()",
       "`strategy` must call a strategy, not the optimizer `sgd`"},
      {"loss = mse, optimizer = adam()", "`loss` must call the loss: `mse(...)`"},
      {"loss = mse(y), optimizer = 3", "`optimizer` must call an optimizer, not i64"},
  };
  for (const Case& c : cases) {
    auto p = check(head + "train t = { data = data, model = net(x), " + c.entries + " }\n");
    EXPECT_NE(errors(*p).find(c.message), std::string::npos) << c.entries << ":\n" << errors(*p);
  }
  auto model_is_a_loss = check(head + "train t = { data = data, model = mse(x), loss = mse(y), optimizer = adam() }\n");
  EXPECT_NE(errors(*model_is_a_loss).find("`model` must call a model"), std::string::npos) << errors(*model_is_a_loss);
}

TEST(Sema, FnParameterWithUnknownLengthAcceptsAnyLength) {
  auto p = check(R"(
fn total(v: f32[?]) -> f32 = sum(v)
pipeline p = range(4) | map(r => { a: total([1.0, 2.0]), b: total(f32([r.value, 1, 2])) })
)");
  EXPECT_EQ(errors(*p), "");
  EXPECT_EQ(element(*p, "p"), "{a: f32, b: f32}");
}

TEST(Sema, EmptyFileIsAValidSpec) {
  for (const char* text : {"", "\n\n", "# only a comment\n", "   \t  "}) {
    auto p = check(text);
    EXPECT_TRUE(p->diags.all().empty()) << text;
    EXPECT_TRUE(p->main().decls.empty());
  }
}

TEST(Sema, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    std::string text(2000 + round * 300, '\0');
    for (char& c : text) c = static_cast<char>(rng() & 0xFF);
    auto p = check(text);
    EXPECT_TRUE(p->diags.has_errors()) << "round " << round;
    EXPECT_TRUE(has_kind(*p, DiagKind::bad_character) || has_kind(*p, DiagKind::syntax_error)) << "round " << round;
  }
}

TEST(Sema, RandomTokensNeverCrash) {
  // Shuffled pieces of real specs: mostly valid tokens in invalid orders.
  const char* pieces[] = {"source", "pipeline", "model", "train", "fn",  "const",  "import", "=",
                          "|",      "=>",       "(",     ")",     "[",   "]",      "{",      "}",
                          ",",      ";",        ":",     "...",   "map", "batch",  "r",      ".",
                          "value",  "1",        "0.5",   "\"x\"", "f32", "[8, 8]", "+",      "-",
                          "**",     "//",       "?",     "\n",    "->",  "&&",     "!",      "range(3)"};
  std::mt19937 rng(99);
  for (int round = 0; round < 200; ++round) {
    std::string text;
    int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) text += std::string(pieces[rng() % std::size(pieces)]) + " ";
    auto p = check(text);
    (void)p;  // any diagnostics are fine; not crashing is the test
  }
  SUCCEED();
}

TEST(Sema, NonAsciiCharactersKeepByteColumns) {
  // A comment with multi-byte characters before an error must not shift its location.
  auto p = check("# größe — ok\nconst a = b\npipeline q = range(a)\n");
  ASSERT_EQ(p->diags.all().size(), 1u);
  const Diagnostic& d = p->diags.all()[0];
  EXPECT_EQ(d.kind, DiagKind::unknown_name);
  const std::string& text = p->sources.file(d.range.file).text();
  EXPECT_EQ(text.substr(d.range.begin, d.range.end - d.range.begin), "b");
  // Strings keep their UTF-8 as written.
  auto q = check("const s = \"größe\"\npipeline p = files(s)\n");
  EXPECT_EQ(errors(*q), "");
  EXPECT_EQ(decl(*q, "s")->value->constant->s, "größe");
  // A non-ASCII letter outside a string is one bad character, not one per byte.
  auto r = check("const ß = 1\n");
  int bad = 0;
  for (const auto& diag : r->diags.all()) bad += diag.kind == DiagKind::bad_character;
  EXPECT_EQ(bad, 1);
}

TEST(Sema, HugeSpecIsRefused) {
  std::string text(17u << 20, ' ');
  auto p = check(text);
  ASSERT_EQ(p->diags.all().size(), 1u);
  EXPECT_EQ(p->diags.all()[0].kind, DiagKind::syntax_error);
  EXPECT_NE(p->diags.all()[0].message.find("refused"), std::string::npos);
}

TEST(Sema, TenMegabyteSpecIsHandled) {
  // 10 MB of comments around one pipeline: read, lexed and checked like any spec.
  std::string text;
  text.reserve(10u << 20);
  while (text.size() < (10u << 20)) text += "# a long comment line that is repeated until the file is ten megabytes\n";
  text += "pipeline p = range(3) | batch(2)\n";
  auto p = check(text);
  EXPECT_EQ(errors(*p), "");
  EXPECT_EQ(element(*p, "p"), "{value: i64[?]} batched(1)");
}

TEST(Sema, LongOperatorChainIsHandled) {
  // A 2 MB expression: parsed on a large stack, cut off by the AST builder's depth limit.
  std::string text = "const x = 1";
  text.reserve(2u << 20);
  while (text.size() < (2u << 20)) text += "+1";
  text += "\n";
  auto start = std::chrono::steady_clock::now();
  auto p = check(text);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(has_kind(*p, DiagKind::nesting_too_deep));
  EXPECT_LT(seconds, 120.0);
}

TEST(Sema, ManyDeclarationsAreHandled) {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "const c" + std::to_string(i) + " = " + (i ? "c" + std::to_string(i - 1) + " + 1" : "0") + "\n";
  text += "pipeline p = range(c19999)\n";
  auto p = check(text);
  EXPECT_EQ(errors(*p), "");
  EXPECT_EQ(decl(*p, "c19999")->value->constant->i, 19999);
}

TEST(Sema, DeepNesting) {
  auto nested = [](int depth, char open, char close) {
    return "const x = " + std::string(depth, open) + "1" + std::string(depth, close) + "\n";
  };
  // Within the limit: fine.
  auto ok = check(nested(200, '(', ')'));
  EXPECT_EQ(errors(*ok), "");
  EXPECT_EQ(decl(*ok, "x")->value->constant->i, 1);
  // Past it: one error, no crash.
  for (auto [open, close] : {std::pair{'(', ')'}, std::pair{'[', ']'}}) {
    auto deep = check(nested(300, open, close));
    EXPECT_TRUE(has_kind(*deep, DiagKind::nesting_too_deep));
  }
  auto unclosed = check("const x = " + std::string(100000, '(') + "\n");
  EXPECT_TRUE(has_kind(*unclosed, DiagKind::nesting_too_deep));
  // Prefix operators nest without brackets.
  auto unary = check("const x = " + std::string(20000, '-') + "1\n");
  EXPECT_TRUE(has_kind(*unary, DiagKind::nesting_too_deep));
  auto chain = check("const x = 1" + std::string() + [] {
    std::string s;
    for (int i = 0; i < 5000; ++i) s += " * 1";
    return s;
  }() + "\n");
  EXPECT_TRUE(has_kind(*chain, DiagKind::nesting_too_deep));
}

TEST(Sema, SeveralSyntaxErrorsInOneRun) {
  auto p = check(
      "const a = (1 + 2\nconst ok = 3\nfn f(x: f32) -> f32 = x * * 2\npipeline p = range(ok) | batch(4,, true)\n");
  int syntax = 0;
  for (const auto& d : p->diags.all()) syntax += d.kind == DiagKind::syntax_error;
  EXPECT_GE(syntax, 3);
  EXPECT_NE(decl(*p, "ok"), nullptr);
}

}  // namespace
}  // namespace pipec
