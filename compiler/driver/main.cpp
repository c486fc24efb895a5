#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/front/parser.h"

int main(int argc, char** argv) {
  using namespace pipec;
  if (argc < 2) return 2;
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  SourceManager sm;
  uint32_t id = sm.add(argv[1], ss.str());
  Diagnostics diags(sm);
  auto m = parse_module(sm, id, diags);
  diags.print(std::cerr);
  std::cout << m->decls.size() << " decls\n";
  return diags.has_errors() ? 1 : 0;
}
