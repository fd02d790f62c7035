// `ringmaster bench`: nccl-tests-style all-reduce figures for N local ranks.
#pragma once

#include <string>
#include <vector>

namespace ringmaster::cli {

// args: what follows `ringmaster bench`; returns the process exit code.
int BenchMain(const std::vector<std::string>& args);

}  // namespace ringmaster::cli
