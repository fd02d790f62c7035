// ringmaster-worker's command line: its flags and their parsing.
#pragma once

#include <optional>
#include <string>

#include "ringmaster/communicator.h"

namespace ringmaster::worker {

struct Flags {
  int steps = 10;
  std::string model = "resnet50";
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int stall_at = -1;
  int crash_at = -1;
  std::string drill_task;  // "worker:1": drills apply to that task only
  bool async = false;
  bool quiet = false;
  bool print_env = false;
  bool recover = false;
  bool crash_in_recovery = false;  // drill: die after the re-formation, on the first start
};

// Reads argv into *flags. An exit code when the program is done (--help: 0,
// --check-c-api: its result, a bad flag: 2, with the usage on stderr);
// nullopt to go on.
std::optional<int> ParseFlags(int argc, char** argv, Flags* flags);

}  // namespace ringmaster::worker
