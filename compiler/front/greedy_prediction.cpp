#include "compiler/front/greedy_prediction.h"

#include <optional>
#include <unordered_map>

#include "PipeParser.h"
#include "antlr4-runtime.h"

namespace pipec {

namespace {

using antlr4::atn::ATN;
using antlr4::atn::ATNState;
using antlr4::atn::ParserATNSimulator;
using antlr4::atn::Transition;
using pipegen::PipeParser;

// One operator or suffix of expr's loop: which alternative of the choice it starts, and the precedence
// that alternative needs (ANTLR's precpred: it applies while its precedence is at least the parser's).
struct LoopOperator {
  size_t alternative = 0;
  int precedence = 0;
};

// The decisions, found in the ATN by their shape (decision numbers change with every grammar edit), and
// the alternative numbers of their answers.
struct GreedyDecisions {
  size_t suffix_loop = 0;    // expr's loop over suffixes and operators: 1 goes on, 2 ends the expression
  size_t suffix_choice = 0;  // which suffix or operator, once it goes on
  std::unordered_map<size_t, LoopOperator> operators;  // by the token that starts it
  size_t lambda_body = 0;                              // `=> (block | expr)`: 1 the block, 2 the expr
};

// The rule that an alternative starting at `s` calls first, through epsilon transitions; -1 if it
// matches a token first or branches.
int first_rule_called(ATNState* s) {
  for (int steps = 0; s && steps < 8; ++steps) {
    if (s->transitions.size() != 1) return -1;
    const Transition* t = s->transitions[0];
    if (t->getSerializationType() == Transition::RULE) return static_cast<int>(t->target->ruleIndex);
    if (!t->isEpsilon()) return -1;
    s = t->target;
  }
  return -1;
}

// The loop's alternatives (`expr LPAREN ...`, `expr op=(STAR | ...) expr`, ...) start with their precedence
// predicate and then one token or a set of tokens. False if one does not.
bool read_loop_operators(antlr4::atn::DecisionState* choice, GreedyDecisions& d) {
  for (size_t alt = 0; alt < choice->transitions.size(); ++alt) {
    ATNState* s = choice->transitions[alt]->target;
    std::optional<int> precedence;
    for (int steps = 0; s && steps < 8 && s->transitions.size() == 1; ++steps) {
      const Transition* t = s->transitions[0];
      const auto type = t->getSerializationType();
      if (type == Transition::PRECEDENCE) {
        precedence = static_cast<const antlr4::atn::PrecedencePredicateTransition*>(t)->precedence;
      } else if (type == Transition::ATOM || type == Transition::SET) {
        if (!precedence) return false;
        for (const size_t token : t->label().toList())
          if (!d.operators.emplace(token, LoopOperator{alt + 1, *precedence}).second) return false;
        break;
      } else if (!t->isEpsilon()) {
        return false;
      }
      s = t->target;
    }
  }
  return !d.operators.empty();
}

std::optional<GreedyDecisions> find_decisions(const ATN& atn) {
  std::optional<size_t> loop, body;
  GreedyDecisions d;
  for (antlr4::atn::DecisionState* s : atn.decisionToState) {  // getStateType() is not const
    if (s->ruleIndex != PipeParser::RuleExpr) continue;
    const auto type = s->getStateType();
    if (type == ATNState::STAR_LOOP_ENTRY &&
        static_cast<const antlr4::atn::StarLoopEntryState*>(s)->isPrecedenceDecision) {
      if (loop || s->transitions.size() != 2 || s->transitions[0]->target->getStateType() != ATNState::STAR_BLOCK_START)
        return std::nullopt;
      auto* choice = static_cast<antlr4::atn::DecisionState*>(s->transitions[0]->target);
      if (!read_loop_operators(choice, d)) return std::nullopt;
      loop = static_cast<size_t>(s->decision);
      d.suffix_choice = static_cast<size_t>(choice->decision);
    } else if (type == ATNState::BLOCK_START && s->transitions.size() == 2) {
      const int first = first_rule_called(s->transitions[0]->target);
      const int second = first_rule_called(s->transitions[1]->target);
      if (first == PipeParser::RuleBlock && second == PipeParser::RuleExpr) {
        if (body) return std::nullopt;
        body = static_cast<size_t>(s->decision);
      }
    }
  }
  if (!loop || !body) return std::nullopt;
  d.suffix_loop = *loop;
  d.lambda_body = *body;
  return d;
}

const std::optional<GreedyDecisions>& decisions(const PipeParser& parser) {
  static const std::optional<GreedyDecisions> found = find_decisions(parser.getATN());
  return found;
}

class GreedyPrediction final : public ParserATNSimulator {
 public:
  GreedyPrediction(PipeParser& parser, ParserATNSimulator& antlr, const GreedyDecisions& d)
      : ParserATNSimulator(&parser, parser.getATN(), antlr.decisionToDFA, antlr.getSharedContextCache()),
        parser_(parser),
        d_(d) {
    setPredictionMode(antlr.getPredictionMode());
  }

  size_t adaptivePredict(antlr4::TokenStream* input, size_t decision, antlr4::ParserRuleContext* outer) override {
    if (decision == d_.suffix_loop || decision == d_.suffix_choice) {
      const auto op = d_.operators.find(input->LA(1));
      const bool applies = op != d_.operators.end() && op->second.precedence >= parser_.getPrecedence();
      if (decision == d_.suffix_loop) return applies ? 1 : 2;
      if (applies) return op->second.alternative;
    } else if (decision == d_.lambda_body && input->LA(1) == PipeParser::LBRACE) {
      const size_t third = input->LA(3);
      return third == PipeParser::COLON || third == PipeParser::COMMA ? 2 : 1;
    }
    return ParserATNSimulator::adaptivePredict(input, decision, outer);
  }

 private:
  const PipeParser& parser_;
  const GreedyDecisions& d_;
};

}  // namespace

bool use_greedy_prediction(PipeParser& parser) {
  const std::optional<GreedyDecisions>& d = decisions(parser);
  auto* antlr = parser.getInterpreter<ParserATNSimulator>();
  if (!d || !antlr) return false;
  parser.setInterpreter(new GreedyPrediction(parser, *antlr, *d));  // deletes the one it replaces
  return true;
}

void use_antlr_prediction(PipeParser& parser) {
  auto* current = parser.getInterpreter<ParserATNSimulator>();
  if (!current || !dynamic_cast<GreedyPrediction*>(current)) return;
  auto* antlr =
      new ParserATNSimulator(&parser, parser.getATN(), current->decisionToDFA, current->getSharedContextCache());
  antlr->setPredictionMode(current->getPredictionMode());
  parser.setInterpreter(antlr);
}

}  // namespace pipec
