// ANTLR parse tree -> AST. Internal to the parser; include parser.h instead.
#pragma once

#include <string>

#include "compiler/front/ast.h"
#include "compiler/front/diagnostics.h"

namespace pipegen {
class PipeParser;
}

namespace antlr4 {
class ParserRuleContext;
}

namespace pipec {

/// Appends the declarations of `program` (a PipeParser::ProgramContext) to `out`. Declarations that
/// ANTLR could only partly recover are skipped; their syntax errors were already reported.
void build_ast(antlr4::ParserRuleContext* program, uint32_t file, const std::string& text, Diagnostics& diags,
               Module& out);

/// The AST of one expression (a PipeParser::ExprContext); null when the builder reported an error.
ExprPtr build_expression(antlr4::ParserRuleContext* expr, uint32_t file, const std::string& text, Diagnostics& diags);

}  // namespace pipec
