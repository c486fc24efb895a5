// A prediction for the parser's first stage that decides the expression grammar's choices from the next
// token, where ANTLR simulates the parse ahead.
//
// The grammar has two ambiguities that ANTLR resolves for the first alternative, but only after
// simulating the parse until the alternatives agree again, which can be the end of a long argument list:
//
// - A statement and what follows it in a block (`a = f` then `(x) => x`, or `a = f(x) => x`; `a = b`
//   then `-c`, or `a = b - c`): at a `(`, `[`, `-` or `+` after an expression the parser asks whether
//   the expression goes on or ends. On `map(r => { ... })` it read the whole lambda before answering
//   "goes on". Greedy: an operator or suffix right after an expression continues it when its precedence
//   lets it (as ANTLR's precedence predicates do), and every other token ends it; which operator is then
//   the token's. The table of operators, their alternatives and precedences is read from the grammar.
// - A lambda's body `{ ... }`: a block, or an expression that is a block or a record. Greedy: a block,
//   unless the third token is `:` or `,` (`{ x: 1 }`, `{ x, y }`: only a record is written so).
//
// Each greedy answer is the one ANTLR gives whenever both alternatives parse. When the greedy answer
// is wrong (`a = f` `(x) => x` without a `;`), the first stage fails, and the parser's second stage,
// full LL with ANTLR's own prediction, parses the file as before: the accepted language and every tree
// stay the same (tests/unit/greedy_prediction_test.cpp holds both stages equal with and without it).
// A process's first parse of examples/chess/chess.pipe alone took 5.9 ms with ANTLR's prediction (most
// of it building ANTLR's prediction cache for these decisions) and 1.6 ms with the `(`, `[` and lambda
// answers; with the operators too, `pipec check` of chess.pipe and its import fell from 14.0 to 7.6 ms
// of CPU in all.
#pragma once

namespace pipegen {
class PipeParser;
}

namespace pipec {

/// Replaces `parser`'s prediction with the greedy one (the decisions above; every other decision is
/// ANTLR's). Returns false, changing nothing, if the grammar no longer has these decisions.
bool use_greedy_prediction(pipegen::PipeParser& parser);

/// Puts ANTLR's own prediction back (for the second stage).
void use_antlr_prediction(pipegen::PipeParser& parser);

}  // namespace pipec
