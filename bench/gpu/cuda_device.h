// rm-bench-gpu's BenchDevice on a real GPU: the CUDA runtime this program
// links (the file the agent is told to dlopen too) and, for the all-reduce
// bound, the very NCCL library the agent loaded (dlopen'd with RTLD_NOLOAD
// from RINGMASTER_NCCL_LIBRARY, so a bound on another NCCL is impossible).
#pragma once

#include <memory>
#include <string>

#include "gpu_cases.h"

namespace rmgpubench {

// The GPU count (0 when there is none, or no driver) and, when 0, why.
int CountGpus(std::string* why);
// "NVIDIA H200 (132 SMs, 139.8 GiB), driver 13.0, runtime 12.9"
std::string DescribeGpu0();
// Device 0.
std::unique_ptr<BenchDevice> MakeCudaDevice();

}  // namespace rmgpubench
