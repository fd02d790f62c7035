// A job's fresh key, the secret every member proves before it may join or
// send data: what the operator puts in a job's key Secret and what
// `ringmaster run` writes to its run's key file. The api's one system call.
#pragma once

#include <cstddef>
#include <string>

#include "ringmaster/status.h"

namespace ringmaster {

inline constexpr size_t kJobKeyBytes = 32;

// kJobKeyBytes bytes from the kernel's CSPRNG (getrandom(2): it blocks only
// until the pool is seeded, at boot); Unavailable "getrandom: ERROR" if it
// fails. The caller wipes the bytes once they are stored.
StatusOr<std::string> NewJobKey();

}  // namespace ringmaster
