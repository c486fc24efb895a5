#include "compiler/front/diagnostics.h"

#include <gtest/gtest.h>

#include <set>

namespace pipec {

TEST(Diagnostics, RendersCaretUnderWholeRange) {
  SourceManager sm;
  uint32_t f = sm.add("a.pipe", "const x = 1\npipeline p = src | batch(0)\n");
  Diagnostics d(sm);
  // `batch(0)` starts at column 20 of line 2.
  uint32_t begin = sm.file(f).offset_of(2, 20);
  d.report(DiagKind::invalid_argument_value, {f, begin, begin + 8}, "batch size must be > 0").help = "use 1 or more";
  std::string out = d.render(d.all()[0]);
  EXPECT_EQ(out,
            "a.pipe:2:20: error[invalid_argument_value]: batch size must be > 0\n"
            "    2 | pipeline p = src | batch(0)\n"
            "      |                    ^~~~~~~~\n"
            "help: use 1 or more\n");
  EXPECT_EQ(d.error_count(), 1u);
}

TEST(Diagnostics, ClosestName) {
  EXPECT_EQ(closest_name("flgs", {"flags", "board", "score"}), "flags");
  EXPECT_EQ(closest_name("zzzzzz", {"flags", "board"}), "");
}

TEST(Diagnostics, EveryKindHasAUniqueName) {
  std::set<std::string_view> names;
  for (const auto& k : all_diag_kinds()) EXPECT_TRUE(names.insert(k.name).second) << k.name;
  EXPECT_GT(names.size(), 30u);
}

}  // namespace pipec
