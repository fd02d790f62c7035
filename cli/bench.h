// `ringmaster bench`: nccl-tests-style all-reduce figures for N local ranks.
#pragma once

namespace ringmaster::cli {

// argv[0] is "bench"; returns the process exit code.
int BenchMain(int argc, char** argv);

}  // namespace ringmaster::cli
