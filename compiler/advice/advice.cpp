#include "compiler/advice/advice.h"

#include "compiler/advice/rules.h"

namespace pipec {

namespace {

struct Rule {
  AdviceRuleInfo info;
  void (*run)(const RunFacts&, std::vector<Advice>&);
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> list = {
#define ADVICE_RULE(name, lesson) {{#name, lesson}, advise_##name},
#include "compiler/advice/advice_rules.def"
#undef ADVICE_RULE
  };
  return list;
}

}  // namespace

std::vector<Advice> advise(const RunFacts& facts) {
  std::vector<Advice> out;
  if (!facts.plan || facts.stages.size() != facts.plan->stages.size()) return out;
  for (const Rule& r : rules()) {
    const size_t before = out.size();
    r.run(facts, out);
    for (size_t i = before; i < out.size(); ++i) out[i].rule = r.info.name;
  }
  return out;
}

const std::vector<AdviceRuleInfo>& advice_rules() {
  static const std::vector<AdviceRuleInfo> infos = [] {
    std::vector<AdviceRuleInfo> v;
    for (const Rule& r : rules()) v.push_back(r.info);
    return v;
  }();
  return infos;
}

}  // namespace pipec
