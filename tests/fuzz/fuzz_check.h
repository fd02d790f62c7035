// What every fuzz target uses: a check that aborts (so libFuzzer reports the
// input as a crash) with the invariant that failed.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringmaster/status.h"

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace ringmaster::fuzz {

// An error says what went wrong: a code other than OK and a message.
inline void CheckError(const Status& s) {
  FUZZ_CHECK(!s.ok());
  FUZZ_CHECK(!s.message().empty());
}

}  // namespace ringmaster::fuzz
