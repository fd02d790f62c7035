// rm-bench-gpu: the agent's GPU paths through its public API, each figure
// beside a bound measured in the same run (docs/benchmarks/gpu.md):
//   pack     one member, NCCL, 64 MiB of 4 KiB / 64 KiB / 1 MiB device
//            tensors in one call, against one device-to-device copy of the
//            same bytes;
//   latency  a one-rank NCCL all-reduce (MEAN) of 4 B and 16 MiB through the
//            agent, against a one-rank out-of-place ncclAllReduce with
//            ncclAvg on the NCCL the agent loaded;
//   staging  RING host staging, N members sharing GPU 0 (threads, TCP on
//            127.0.0.1), against the CPU engine's all-reduce of the same
//            bytes in host memory, in the same group.
// Fresh random inputs for each figure; every byte of every output (and of
// the gaps between packed tensors) is compared with a reference computed
// on the host after the timed calls: a wrong byte, or an error, fails the
// run (exit 1) and names the case. Medians, warm-ups left out. Without a
// GPU it says so and exits 77 at once.
//
//   rm-bench-gpu [--members N] [--mib M] [--iters K] [--seed S] [--csv FILE]
//                [--only pack,latency,staging]
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_check.h"
#include "cuda_device.h"
#include "gpu_cases.h"

using namespace rmgpubench;

namespace {

void Usage() {
  std::printf(
      "usage: rm-bench-gpu [--members N] [--mib M] [--iters K] [--seed S] [--csv FILE]\n"
      "                    [--only pack,latency,staging]\n"
      "  --members N  members sharing GPU 0 for host staging (default 2)\n"
      "  --mib M      bytes packed per call, and the largest staged size (default 64)\n"
      "  --iters K    timed calls per figure (default 20; 10x for the latencies)\n"
      "  --csv FILE   also write the figures as CSV (kind,case,bytes,ringmaster,bound,unit,ratio,...)\n"
      "Exit: 0 every byte right, 1 a wrong byte or an error (named), 2 bad options, 77 no GPU.\n");
}

[[noreturn]] void Bad(const std::string& what) {
  std::fprintf(stderr, "rm-bench-gpu: %s (see --help)\n", what.c_str());
  std::exit(2);
}

long Number(const char* flag, const char* v, long lo) {
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (!*v || *end || n < lo)
    Bad(std::string(flag) + " wants a number >= " + std::to_string(lo) + ", not '" + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  Plan plan;
  std::string csv_path, only = "pack,latency,staging";
  size_t mib = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    }
    if (i + 1 >= argc) Bad("unknown argument or missing value: " + a);
    const char* v = argv[++i];
    if (a == "--members")
      plan.members = static_cast<int>(Number("--members", v, 1));
    else if (a == "--mib")
      mib = static_cast<size_t>(Number("--mib", v, 1));
    else if (a == "--iters")
      plan.iters = static_cast<int>(Number("--iters", v, 1));
    else if (a == "--seed")
      plan.seed = static_cast<uint64_t>(Number("--seed", v, 0));
    else if (a == "--csv")
      csv_path = v;
    else if (a == "--only")
      only = v;
    else
      Bad("unknown argument " + a);
  }
  plan.latency_iters = plan.iters * 10;
  plan.pack_total_bytes = mib << 20;
  std::vector<size_t> staged;
  for (size_t b : plan.staging_bytes)
    if (b <= plan.pack_total_bytes) staged.push_back(b);
  if (staged.empty() || staged.back() != plan.pack_total_bytes) staged.push_back(plan.pack_total_bytes);
  plan.staging_bytes = staged;

  // What the agent dlopens (docs/gpu.md): the runtime this program links and
  // the build's NCCL, unless the caller names others; the bound uses the
  // NCCL the agent loaded.
  ::setenv("RINGMASTER_CUDART_LIBRARY", RINGMASTER_BENCH_CUDART, 0);
  ::setenv("RINGMASTER_NCCL_LIBRARY", RINGMASTER_BENCH_NCCL, 0);
  std::string why;
  if (CountGpus(&why) == 0) {
    std::printf("rm-bench-gpu: skipped: no GPU (%s)\n", why.c_str());
    return 77;
  }

  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) Bad("cannot write " + csv_path + ": " + std::strerror(errno));
    std::fprintf(csv, "%s\n", CsvHeader().c_str());
    std::fflush(csv);
  }
  std::printf("rm-bench-gpu: %s; %d timed calls per figure (%d per latency), median, seed %llu\n",
              DescribeGpu0().c_str(), plan.iters, plan.latency_iters,
              static_cast<unsigned long long>(plan.seed));
  std::printf(
      "ratio: Ringmaster's speed over the bound's (1 = as fast; GB/s: ringmaster / bound, us: bound / "
      "ringmaster)\n\n%s\n",
      TableHeader().c_str());
  std::fflush(stdout);
  std::vector<Row> rows;
  const Emit emit = [&](const Row& r) {
    rows.push_back(r);
    std::printf("%s\n", TableLine(r).c_str());
    std::fflush(stdout);
    if (csv) {
      std::fprintf(csv, "%s\n", CsvLine(r).c_str());
      std::fflush(csv);
    }
  };
  auto wants = [&](const char* kind) {
    return ("," + only + ",").find(std::string(",") + kind + ",") != std::string::npos;
  };

  auto dev = MakeCudaDevice();
  if (wants("pack") || wants("latency")) {
    auto one = FormLocalGroup(1);
    if (!one.ok()) {
      Row r;
      r.kind = "pack";
      r.name = "forming one member";
      r.check = one.status().ToString();
      emit(r);
    } else {
      if (wants("pack")) MeasurePacking(*dev, *(*one)[0], plan, emit);
      if (wants("latency")) MeasureLatency(*dev, *(*one)[0], plan, emit);
    }
  }
  if (wants("staging")) MeasureStaging(*dev, plan, emit);
  if (!dev->BoundLibrary().empty())
    std::printf("\nthe all-reduce bound ran on %s\n", dev->BoundLibrary().c_str());
  if (csv) std::fclose(csv);

  const int rc = ExitCode(rows);
  for (const auto& r : rows)
    if (r.check != "ok")
      std::fprintf(stderr, "rm-bench-gpu: FAILED: %s: %s\n", r.name.c_str(), r.check.c_str());
  if (rows.empty()) {
    std::fprintf(stderr, "rm-bench-gpu: nothing measured (--only %s)\n", only.c_str());
    return 2;
  }
  return rc;
}
