#include "bench.h"

#include <iostream>

namespace ringmaster::cli {

int BenchMain(int, char**) {
  std::cerr << "ringmaster bench: Unimplemented: the collective engine is not built yet\n";
  return 3;
}

}  // namespace ringmaster::cli
