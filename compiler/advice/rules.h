// The advice rules, one function each (rule_NAME.cpp), declared from advice_rules.def.
#pragma once

#include <vector>

#include "compiler/advice/advice.h"

namespace pipec {

#define ADVICE_RULE(name, lesson) void advise_##name(const RunFacts& facts, std::vector<Advice>& out);
#include "compiler/advice/advice_rules.def"
#undef ADVICE_RULE

}  // namespace pipec
