// ringmaster-worker --check-c-api: the collectives beyond all-reduce through
// the C API (ringmaster.h), in real processes, every element checked.
#pragma once

namespace ringmaster::worker {

// Forms the group from the environment, runs the checks, and returns the
// process's exit code (0: every check passed; it then prints
// "c-api collectives verified").
int CheckCApiCollectives();

}  // namespace ringmaster::worker
