// Tests for `pipec fmt`: golden files (tests/fmt/NAME.in.pipe -> NAME.out.pipe), and properties that
// hold for every .pipe file in the repository: formatting is idempotent, keeps the AST and every comment.
//
// PIPEC_UPDATE_GOLDEN=1 rewrites the .out.pipe files instead of comparing against them.
#include "compiler/fmt/formatter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "PipeLexer.h"
#include "antlr4-runtime.h"
#include "compiler/driver/commands.h"
#include "compiler/front/diagnostics.h"
#include "compiler/front/parser.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------
// Helpers

struct Parsed {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<Module> module;
  uint32_t id = 0;

  std::string errors() const {
    std::ostringstream out;
    diags->print(out);
    return out.str();
  }
};

Parsed parse(const std::string& text, const std::string& path = "test.pipe") {
  Parsed p;
  p.id = p.sources->add(path, text);
  p.diags = std::make_unique<Diagnostics>(*p.sources);
  p.module = parse_module(*p.sources, p.id, *p.diags);
  return p;
}

// Formats `text`, which must parse; "<syntax error>" plus the diagnostics otherwise.
std::string format_text(const std::string& text, const std::string& path = "test.pipe") {
  Parsed p = parse(text, path);
  if (p.diags->has_errors()) return "<syntax error>\n" + p.errors();
  return format_module(*p.module, p.sources->file(p.id));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

fs::path source_dir() { return fs::path(PIPEC_SOURCE_DIR); }

// Every .pipe file under the given folders of the repository (those that exist), sorted.
std::vector<fs::path> pipe_files(const std::vector<std::string>& folders) {
  std::vector<fs::path> out;
  for (const std::string& f : folders) {
    fs::path dir = source_dir() / f;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".pipe") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------------------------------------------
// An AST printer that ignores source ranges, to compare the meaning of two texts.

class Dumper {
 public:
  std::string module(const Module& m) {
    for (const auto& d : m.decls) decl(*d);
    return out_;
  }

 private:
  void type(const TypeSyntax& t) {
    out_ += t.name;
    if (!t.has_dims) return;
    out_ += "[";
    for (const DimSyntax& d : t.dims) {
      switch (d.kind) {
        case DimSyntax::Known: out_ += std::to_string(d.value); break;
        case DimSyntax::Unknown: out_ += "?"; break;
        case DimSyntax::Named: out_ += d.name; break;
      }
      out_ += ",";
    }
    out_ += "]";
  }

  void opt(const ExprPtr& e) {
    if (e) expr(*e);
    else out_ += "_";
  }

  void expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLit: out_ += "int:" + e.as<IntLitExpr>()->spelling; return;
      case ExprKind::FloatLit: out_ += "float:" + e.as<FloatLitExpr>()->spelling; return;
      case ExprKind::StringLit: out_ += "str:" + e.as<StringLitExpr>()->spelling; return;
      case ExprKind::BoolLit: out_ += e.as<BoolLitExpr>()->value ? "true" : "false"; return;
      case ExprKind::Name: out_ += "name:" + e.as<NameExpr>()->name; return;
      case ExprKind::List:
        out_ += "(list";
        for (const auto& i : e.as<ListExpr>()->items) {
          out_ += " ";
          expr(*i);
        }
        out_ += ")";
        return;
      case ExprKind::Record:
        out_ += "(record";
        for (const auto& f : e.as<RecordExpr>()->fields) {
          out_ += " " + f.name + "=";
          opt(f.value);
        }
        out_ += ")";
        return;
      case ExprKind::Block: {
        const auto* b = e.as<BlockExpr>();
        out_ += "(block";
        for (const Stmt& s : b->stmts) {
          out_ += " " + s.name + "=";
          expr(*s.value);
        }
        out_ += " result=";
        expr(*b->result);
        out_ += ")";
        return;
      }
      case ExprKind::Call: {
        const auto* c = e.as<CallExpr>();
        out_ += "(call ";
        expr(*c->callee);
        for (const Arg& a : c->args) {
          out_ += " " + a.name + "=";
          expr(*a.value);
        }
        out_ += ")";
        return;
      }
      case ExprKind::Index: {
        const auto* ix = e.as<IndexExpr>();
        out_ += "(index ";
        expr(*ix->base);
        for (const IndexItem& it : ix->items) {
          switch (it.kind) {
            case IndexItem::Single:
              out_ += " ";
              expr(*it.value);
              break;
            case IndexItem::Ellipsis: out_ += " ..."; break;
            case IndexItem::Slice:
              out_ += " (slice ";
              opt(it.start);
              out_ += " ";
              opt(it.stop);
              out_ += " ";
              opt(it.step);
              out_ += ")";
              break;
          }
        }
        out_ += ")";
        return;
      }
      case ExprKind::Member:
        out_ += "(member ";
        expr(*e.as<MemberExpr>()->base);
        out_ += " " + e.as<MemberExpr>()->member + ")";
        return;
      case ExprKind::Unary:
        out_ += std::string("(") + unary_op_spelling(e.as<UnaryExpr>()->op) + " ";
        expr(*e.as<UnaryExpr>()->operand);
        out_ += ")";
        return;
      case ExprKind::Binary: {
        const auto* b = e.as<BinaryExpr>();
        out_ += std::string("(") + binary_op_spelling(b->op) + " ";
        // A comparison in parentheses under another is a different program than a chain of them.
        auto operand = [&](const Expr& x) {
          const bool kept = is_comparison(b->op) && x.kind == ExprKind::Binary &&
                            is_comparison(x.as<BinaryExpr>()->op) && x.as<BinaryExpr>()->parenthesized;
          if (kept) out_ += "(parens ";
          expr(x);
          if (kept) out_ += ")";
        };
        operand(*b->lhs);
        out_ += " ";
        operand(*b->rhs);
        out_ += ")";
        return;
      }
      case ExprKind::Pipe:
        out_ += "(| ";
        expr(*e.as<PipeExpr>()->lhs);
        out_ += " ";
        expr(*e.as<PipeExpr>()->rhs);
        out_ += ")";
        return;
      case ExprKind::Lambda: {
        const auto* l = e.as<LambdaExpr>();
        out_ += "(lambda";
        if (l->parenthesized) out_ += "()";
        for (const auto& p : l->params) out_ += " " + p;
        out_ += " => ";
        expr(*l->body);
        out_ += ")";
        return;
      }
    }
  }

  void decl(const Decl& d) {
    out_ += std::string(decl_kind_name(d.kind)) + " " + d.name;
    if (d.kind == DeclKind::Import) out_ += (d.import_is_module ? " module:" : " path:") + d.import_path;
    if (d.declared_type) {
      out_ += " : ";
      type(*d.declared_type);
    }
    if (d.kind == DeclKind::Fn || d.kind == DeclKind::Model) {
      out_ += " (";
      for (const Param& p : d.params) {
        out_ += p.name + ":";
        type(p.type);
        out_ += ",";
      }
      out_ += ")";
    }
    if (d.result_type) {
      out_ += " -> ";
      type(*d.result_type);
    }
    if (d.value) {
      out_ += " = ";
      expr(*d.value);
    }
    if (d.has_schema) {
      out_ += " schema{";
      for (const SchemaField& f : d.schema) {
        out_ += f.name + ":";
        type(f.type);
        out_ += "=";
        opt(f.default_value);
        out_ += ";";
      }
      out_ += "}";
    }
    for (const TrainEntry& e : d.entries) {
      out_ += " " + e.key + "=";
      expr(*e.value);
    }
    out_ += "\n";
  }

  std::string out_;
};

std::string dump(const Module& m) { return Dumper().module(m); }

std::vector<std::string> comment_texts(const Module& m) {
  std::vector<std::string> out;
  for (const Comment& c : m.comments) {
    std::string t = c.text;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
    out.push_back(t);
  }
  return out;
}

// The properties every formatted file must have. Returns a description of the first failure, or "".
std::string check_properties(const std::string& text, const std::string& what) {
  Parsed before = parse(text);
  if (before.diags->has_errors()) return what + ": does not parse:\n" + before.errors();
  std::string once = format_module(*before.module, before.sources->file(before.id));
  Parsed after = parse(once);
  if (after.diags->has_errors()) return what + ": formatted text does not parse:\n" + after.errors() + "\n" + once;
  if (dump(*before.module) != dump(*after.module))
    return what + ": formatting changed the AST\nbefore:\n" + dump(*before.module) + "after:\n" + dump(*after.module) +
           "formatted:\n" + once;
  if (comment_texts(*before.module) != comment_texts(*after.module))
    return what + ": formatting lost, duplicated or reordered comments:\n" + once;
  std::string twice = format_module(*after.module, after.sources->file(after.id));
  if (twice != once) return what + ": not idempotent\nonce:\n" + once + "twice:\n" + twice;
  for (const auto& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(once);
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }()) {
    if (!line.empty() && (line.back() == ' ' || line.back() == '\t'))
      return what + ": trailing whitespace in `" + line + "`";
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------
// Golden files

TEST(FmtGolden, InputsFormatToExpectedOutput) {
  fs::path dir = source_dir() / "tests" / "fmt";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  bool update = std::getenv("PIPEC_UPDATE_GOLDEN") && std::string(std::getenv("PIPEC_UPDATE_GOLDEN")) == "1";
  int count = 0;
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 8 && name.ends_with(".in.pipe")) inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& in : inputs) {
    std::string name = in.filename().string();
    fs::path out = dir / (name.substr(0, name.size() - 8) + ".out.pipe");
    std::string got = format_text(read_file(in), in.string());
    if (update) {
      if (!fs::exists(out) || read_file(out) != got) write_file(out, got);
    } else {
      ASSERT_TRUE(fs::exists(out)) << out << " is missing; run with PIPEC_UPDATE_GOLDEN=1";
      EXPECT_EQ(got, read_file(out)) << "for " << in;
    }
    // The expected output is itself formatted.
    EXPECT_EQ(format_text(got), got) << "output of " << in << " is not a fixed point";
    ++count;
  }
  EXPECT_GE(count, 8);
}

// ---------------------------------------------------------------------------------------------------
// Properties over every .pipe file in the repository

TEST(FmtProperties, RepositoryFilesKeepMeaningAndCommentsAndAreIdempotent) {
  std::vector<fs::path> files = pipe_files({"examples", "stdlib", "tests/fmt", "tests/lang"});
  ASSERT_FALSE(files.empty());
  int checked = 0;
  for (const fs::path& f : files) {
    std::string text = read_file(f);
    Parsed p = parse(text);
    if (p.diags->has_errors()) continue;  // tests/lang holds deliberately broken specs
    EXPECT_EQ(check_properties(text, f.string()), "");
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(FmtProperties, ExamplesAndStdlibAreFormatted) {
  for (const fs::path& f : pipe_files({"examples", "stdlib"})) {
    std::string text = read_file(f);
    EXPECT_EQ(format_text(text), text) << f << " is not formatted; run `pipec fmt -w " << f.string() << "`";
  }
}

// Comments can go between any two tokens. These insert comments at token boundaries of a file (trailing,
// on their own line, or between blank lines) and check that the formatter keeps them all and stays
// idempotent: one comment at a time at many boundaries, comments at random sets of boundaries, and one
// comment after every token. Parsing dominates the cost, so by default the one-at-a-time sweep visits
// about `sweep` boundaries per file; PIPEC_FMT_FUZZ_ALL=1 tries every kind of comment at every one.
std::vector<size_t> token_ends(const std::string& text) {
  antlr4::ANTLRInputStream input(text);
  pipegen::PipeLexer lexer(&input);
  lexer.removeErrorListeners();
  std::vector<size_t> ends;
  for (auto tok = lexer.nextToken(); tok->getType() != antlr4::Token::EOF; tok = lexer.nextToken())
    if (tok->getChannel() == antlr4::Token::DEFAULT_CHANNEL) ends.push_back(tok->getStopIndex() + 1);
  return ends;
}

const char* const kFuzzComments[] = {"  # fuzz trailing\n", "\n# fuzz own line\n", "\n\n  # fuzz after blank\n\n"};

// Inserts kFuzzComments[variant[i]] after token i wherever variant[i] >= 0.
std::string with_comments(const std::string& text, const std::vector<size_t>& cuts, const std::vector<int>& variant) {
  std::string out;
  size_t pos = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (variant[i] < 0) continue;
    out += text.substr(pos, cuts[i] - pos) + kFuzzComments[variant[i]];
    pos = cuts[i];
  }
  return out + text.substr(pos);
}

void fuzz_comments(const fs::path& path, size_t sweep = 60) {
  std::string text = read_file(path);
  std::vector<size_t> cuts = token_ends(text);
  ASSERT_GT(cuts.size(), 10u);
  const char* env = std::getenv("PIPEC_FMT_FUZZ_ALL");
  bool all = env && std::string(env) == "1";
  size_t stride = all ? 1 : std::max<size_t>(1, cuts.size() / sweep);
  for (size_t i = 0; i < cuts.size(); i += stride) {
    for (int v = 0; v < 3; ++v) {
      if (!all && v != static_cast<int>((i / stride) % 3)) continue;
      std::vector<int> variant(cuts.size(), -1);
      variant[i] = v;
      ASSERT_EQ(check_properties(with_comments(text, cuts, variant),
                                 path.string() + " with a comment at offset " + std::to_string(cuts[i])),
                "");
    }
  }
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  for (int round = 0; round < 8; ++round) {
    std::vector<int> variant(cuts.size(), -1);
    for (int& v : variant)
      if (next() % 6 == 0) v = static_cast<int>(next() % 3);
    ASSERT_EQ(check_properties(with_comments(text, cuts, variant),
                               path.string() + " with random comments, round " + std::to_string(round)),
              "");
  }
  for (int v = 0; v < 3; ++v) {
    std::vector<int> variant(cuts.size(), v);
    ASSERT_EQ(check_properties(with_comments(text, cuts, variant), path.string() + " with a comment after every token"),
              "");
  }
}

TEST(FmtProperties, CommentsAtTokenBoundariesOfExamplesAndStdlib) {
  std::vector<fs::path> files = pipe_files({"examples", "stdlib"});
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) fuzz_comments(f, 20);
}

TEST(FmtProperties, CommentsAtTokenBoundariesOfGoldenInputs) {
  for (const char* name : {"precedence", "indexing", "lambdas", "model_train", "long_lines", "comments", "spacing"})
    fuzz_comments(source_dir() / "tests/fmt" / (std::string(name) + ".in.pipe"), 25);
}

// ---------------------------------------------------------------------------------------------------
// Focused cases

// Formats `const x = EXPR` and returns what follows `const x = `.
std::string fmt_expr(const std::string& expr) {
  std::string out = format_text("const x = " + expr + "\n");
  std::string prefix = "const x = ";
  if (out.compare(0, prefix.size(), prefix) != 0) return out;
  out = out.substr(prefix.size());
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(FmtExpr, ParenthesesOnlyWherePrecedenceNeedsThem) {
  EXPECT_EQ(fmt_expr("(a+b)*c"), "(a + b) * c");
  EXPECT_EQ(fmt_expr("a+(b*c)"), "a + b * c");
  EXPECT_EQ(fmt_expr("a-(b-c)"), "a - (b - c)");
  EXPECT_EQ(fmt_expr("(a-b)-c"), "a - b - c");
  EXPECT_EQ(fmt_expr("a+(b-c)"), "a + (b - c)");
  EXPECT_EQ(fmt_expr("2**3**2"), "2 ** 3 ** 2");
  EXPECT_EQ(fmt_expr("(2**3)**2"), "(2 ** 3) ** 2");
  EXPECT_EQ(fmt_expr("-(x**2)"), "-(x ** 2)");
  EXPECT_EQ(fmt_expr("-x**2"), "-(x ** 2)");
  EXPECT_EQ(fmt_expr("(-x)**2"), "(-x) ** 2");
  EXPECT_EQ(fmt_expr("-x*2"), "-x * 2");
  EXPECT_EQ(fmt_expr("-(x*2)"), "-(x * 2)");
  // A comparison of comparisons keeps its parentheses; a chain, which the checker refuses, stays one.
  EXPECT_EQ(fmt_expr("(a<b)==(c<d)"), "(a < b) == (c < d)");
  EXPECT_EQ(fmt_expr("(a<b)<c"), "(a < b) < c");
  EXPECT_EQ(fmt_expr("a<b<c"), "a < b < c");
  EXPECT_EQ(fmt_expr("a==b!=(c>=d)<=e"), "a == b != (c >= d) <= e");
  EXPECT_EQ(fmt_expr("(a<b)&&c"), "a < b && c");
  EXPECT_EQ(fmt_expr("((a<b))==c"), "(a < b) == c");
  EXPECT_EQ(fmt_expr("a&&(b||c)"), "a && (b || c)");
  EXPECT_EQ(fmt_expr("(a&&b)||c"), "a && b || c");
  EXPECT_EQ(fmt_expr("(1<<4)+1"), "(1 << 4) + 1");
  EXPECT_EQ(fmt_expr("(a+b).x"), "(a + b).x");
  EXPECT_EQ(fmt_expr("(-a)[0]"), "(-a)[0]");
  EXPECT_EQ(fmt_expr("-a[0]"), "-a[0]");
  EXPECT_EQ(fmt_expr("(a|f)(x)"), "(a | f)(x)");
  EXPECT_EQ(fmt_expr("(a|f)+1"), "(a | f) + 1");
  EXPECT_EQ(fmt_expr("a|(f|g)"), "a | (f | g)");
  EXPECT_EQ(fmt_expr("(a|f)|g"), "a | f | g");
  EXPECT_EQ(fmt_expr("(x=>x)+1"), "(x => x) + 1");
  EXPECT_EQ(fmt_expr("(x=>x)(1)"), "(x => x)(1)");
  EXPECT_EQ(fmt_expr("a|(x=>x*2)|g"), "a | (x => x * 2) | g");
  EXPECT_EQ(fmt_expr("x=>(y=>x+y)"), "x => y => x + y");
  EXPECT_EQ(fmt_expr("f(x=>x|g, 2)"), "f(x => x | g, 2)");
  EXPECT_EQ(fmt_expr("r=>({a})"), "r => ({ a })");
  EXPECT_EQ(fmt_expr("r=>{a,b}"), "r => { a, b }");
  EXPECT_EQ(fmt_expr("- - x"), "--x");
  EXPECT_EQ(fmt_expr("!(a==b)"), "!(a == b)");
}

TEST(FmtExpr, LiteralsKeepTheirSpelling) {
  EXPECT_EQ(fmt_expr("10_000"), "10_000");
  EXPECT_EQ(fmt_expr("1e-3"), "1e-3");
  EXPECT_EQ(fmt_expr("0x1F + 0b1010"), "0x1F + 0b1010");
  EXPECT_EQ(fmt_expr("2.5E+4"), "2.5E+4");
  EXPECT_EQ(fmt_expr(R"("a\"b\n")"), R"("a\"b\n")");
  EXPECT_EQ(format_text("import   \"lib/x.pipe\"\n"), "import \"lib/x.pipe\"\n");
  EXPECT_EQ(format_text("source s = f() { d: bytes[0x10], e: f32[1_000] }\n"),
            "source s = f() {\n  d: bytes[0x10]\n  e: f32[1_000]\n}\n");
}

TEST(FmtExpr, IndexAndSliceForms) {
  EXPECT_EQ(fmt_expr("x[ : , : , [0,4] ]"), "x[:, :, [0, 4]]");
  EXPECT_EQ(fmt_expr("bits[0 : 1536]"), "bits[0:1536]");
  EXPECT_EQ(fmt_expr("x[ : : 2]"), "x[::2]");
  EXPECT_EQ(fmt_expr("x[...,0]"), "x[..., 0]");
  EXPECT_EQ(fmt_expr("x[1:]"), "x[1:]");
  EXPECT_EQ(fmt_expr("x[:-1]"), "x[:-1]");
  EXPECT_EQ(fmt_expr("x[a:b:c,]"), "x[a:b:c]");
  EXPECT_EQ(fmt_expr("x[i+1]"), "x[i + 1]");
}

TEST(FmtExpr, RecordsCallsAndLists) {
  EXPECT_EQ(fmt_expr("{board,flags:f(x),score}"), "{ board, flags: f(x), score }");
  EXPECT_EQ(fmt_expr("shuffle( 10_000 , seed=7 , )"), "shuffle(10_000, seed = 7)");
  EXPECT_EQ(fmt_expr("[ ]"), "[]");
  EXPECT_EQ(fmt_expr("[1,2,3,]"), "[1, 2, 3]");
  EXPECT_EQ(fmt_expr("f()"), "f()");
}

TEST(FmtStatements, ASemicolonKeepsAStatementFromContinuingIntoTheNext) {
  // Without the `;`, `y` followed by `(1 + 2)` on the next line would be a call.
  std::string in = "fn f() -> i64 { x = y; (1 + 2) * x }\n";
  EXPECT_EQ(format_text(in), "fn f() -> i64 {\n  x = y;\n  (1 + 2) * x\n}\n");
  EXPECT_EQ(check_properties(in, "semicolon"), "");
  EXPECT_EQ(check_properties("fn f() -> i64 { x = y; -x }\n", "minus"), "");
  EXPECT_EQ(check_properties("fn f() -> i64 { x = y; [x][0] }\n", "list"), "");
  // A block holding only a name would read as a record.
  EXPECT_EQ(check_properties("const c = f({ x; })\n", "block"), "");
}

TEST(FmtComments, OwnLineAndTrailingCommentsKeepTheirPlace) {
  std::string in =
      "# header\n"
      "const A = 1   # one\n"
      "\n"
      "\n"
      "# about B\n"
      "const B = 2\n"
      "pipeline p = src\n"
      "  # before shuffle\n"
      "  | shuffle(10)  # shuffle it\n"
      "  | map(r => {\n"
      "    # inside\n"
      "    y = r.x   # trailing in block\n"
      "    y\n"
      "    # before the end of the block\n"
      "  })\n"
      "# at the end\n";
  std::string want =
      "# header\n"
      "const A = 1  # one\n"
      "\n"
      "# about B\n"
      "const B = 2\n"
      "\n"
      "pipeline p = src\n"
      "  # before shuffle\n"
      "  | shuffle(10)  # shuffle it\n"
      "  | map(r => {\n"
      "      # inside\n"
      "      y = r.x  # trailing in block\n"
      "      y\n"
      "      # before the end of the block\n"
      "    })\n"
      "# at the end\n";
  EXPECT_EQ(format_text(in), want);
  EXPECT_EQ(check_properties(in, "comments"), "");
}

TEST(FmtComments, ACommentInsideAOneLineConstructMovesToTheLineEnd) {
  EXPECT_EQ(format_text("const x = a[1, # one\n 2]\n"), "const x = a[1, 2]  # one\n");
  // A comment between arguments breaks the call instead.
  EXPECT_EQ(format_text("const x = f(1, # one\n 2)\n"), "const x = f(\n  1,  # one\n  2,\n)\n");
}

TEST(FmtLayout, ShortPipelinesStayOnOneLineLongOnesBreak) {
  EXPECT_EQ(format_text("pipeline p = a|b|c\n"), "pipeline p = a | b | c\n");
  std::string long_one =
      "pipeline p = source_with_a_long_name | shuffle(buffer_size = 100000, seed = 12345) | "
      "batch(1024, drop_remainder = true) | prefetch(auto)\n";
  EXPECT_EQ(format_text(long_one),
            "pipeline p = source_with_a_long_name\n"
            "  | shuffle(buffer_size = 100000, seed = 12345)\n"
            "  | batch(1024, drop_remainder = true)\n"
            "  | prefetch(auto)\n");
}

TEST(FmtLayout, BlankLinesBetweenDeclarations) {
  // Single-line declarations of one kind may stay together; anything else is separated by one blank line.
  EXPECT_EQ(format_text("const A = 1\nconst B = 2\n\n\n\nconst C = 3\n"), "const A = 1\nconst B = 2\n\nconst C = 3\n");
  EXPECT_EQ(format_text("import a\nconst B = 2\n"), "import a\n\nconst B = 2\n");
  EXPECT_EQ(format_text("\n\n# c\n\n\nconst A = 1\n\n\n"), "# c\n\nconst A = 1\n");
  EXPECT_EQ(format_text(""), "");
  EXPECT_EQ(format_text("# only a comment"), "# only a comment\n");
}

// ---------------------------------------------------------------------------------------------------
// The command

class FmtCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "pipec-fmt-test-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Result {
    int rc;
    std::string out, err;
  };
  Result run(const Args& args) {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int rc = cmd_fmt(args);
    Result r{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
    return r;
  }
  std::string file(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    write_file(p, text);
    return p.string();
  }

  fs::path dir_;
};

TEST_F(FmtCommand, PrintsFormattedText) {
  std::string f = file("a.pipe", "const  A=1\n");
  Result r = run({f});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "const A = 1\n");
  EXPECT_EQ(read_file(f), "const  A=1\n");
}

TEST_F(FmtCommand, CheckReportsUnformattedFiles) {
  std::string bad = file("bad.pipe", "const  A=1\n");
  std::string good = file("good.pipe", "const A = 1\n");
  Result r = run({"--check", bad, good});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, bad + ": not formatted\n");
  Result ok = run({"--check", good});
  EXPECT_EQ(ok.rc, 0);
  EXPECT_EQ(ok.out, "");
}

TEST_F(FmtCommand, WriteRewritesOnlyChangedFiles) {
  std::string bad = file("bad.pipe", "const  A=1\n");
  std::string good = file("good.pipe", "const A = 1\n");
  fs::permissions(bad, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  auto good_time = fs::last_write_time(good);
  Result r = run({"-w", bad, good});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(bad), "const A = 1\n");
  EXPECT_EQ(fs::status(bad).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(fs::last_write_time(good), good_time);
  // No temporary files are left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2);
}

TEST_F(FmtCommand, SyntaxErrorsArePrintedAndTheFileIsLeftAlone) {
  std::string text = "const A = (1 +\nconst  B=2\n";
  std::string f = file("broken.pipe", text);
  Result r = run({"-w", f});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("error[syntax_error]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broken.pipe:"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(f), text);
  Result p = run({f});
  EXPECT_EQ(p.rc, 1);
  EXPECT_EQ(p.out, "");
}

TEST_F(FmtCommand, MissingFileIsAnIoError) {
  std::string missing = (dir_ / "nope.pipe").string();
  Result r = run({missing});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "pipec fmt: cannot read " + missing + ": No such file or directory\n");
}

TEST_F(FmtCommand, HelpAndUsageErrors) {
  Result h = run({"--help"});
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("usage: pipec fmt"), std::string::npos);
  EXPECT_EQ(run({"--bogus", "x.pipe"}).rc, 2);
  EXPECT_EQ(run({}).rc, 2);
  EXPECT_EQ(run({"-w", "--check", "x.pipe"}).rc, 2);
}

}  // namespace
}  // namespace pipec
