// rm-bench-mesh-member: one member of bench/mesh/run.py's group. It forms the
// group from TF_CONFIG and RINGMASTER_* (as any agent does), runs one 4-byte
// float32 all-reduce with the algorithm given (ring unless told), then counts
// its own sockets (/proc/self/fd entries that are sockets) while every peer
// is still in the group, and prints one JSON line:
//   {"rank":R,"n":N,"formed_ms":...,"first_allreduce_ms":...,"done_unix_ms":...,"sockets":S}
// formed_ms and first_allreduce_ms count from this process's start; the
// launcher takes the wall time of the whole group from its own clock.
// A barrier after the count keeps every member (and its sockets) alive until
// all have counted.
#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ringmaster/communicator.h"

namespace {

int CountSockets() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    struct stat st {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ++n;
  }
  ::closedir(d);
  return n;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringmaster;
  const auto t0 = std::chrono::steady_clock::now();
  CommunicationOptions per_call;
  const std::string algo = argc > 1 ? argv[1] : "ring";
  auto parsed = ParseAlgorithm(algo, "algorithm");
  if (!parsed.ok()) {
    std::fprintf(stderr, "rm-bench-mesh-member: %s\n", parsed.status().ToString().c_str());
    return 2;
  }
  per_call.algorithm = *parsed;
  auto made = Communicator::FromEnvironment();
  if (!made.ok()) {
    std::fprintf(stderr, "rm-bench-mesh-member: %s\n", made.status().ToString().c_str());
    return 1;
  }
  Communicator& comm = **made;
  const double formed_ms = MsSince(t0);
  float x = 1.f;
  Tensor t{&x, 1, DataType::kFloat32};
  if (Status st = comm.AllReduce({&t, 1}, ReduceOp::kSum, per_call); !st.ok()) {
    std::fprintf(stderr, "rm-bench-mesh-member: rank %d: all-reduce: %s\n", comm.rank(),
                 st.ToString().c_str());
    return 1;
  }
  const double reduced_ms = MsSince(t0);
  const auto unix_ms =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int sockets = CountSockets();
  const bool correct = x == static_cast<float>(comm.size());
  std::printf(
      "{\"rank\":%d,\"n\":%d,\"formed_ms\":%.1f,\"first_allreduce_ms\":%.1f,\"done_unix_ms\":%.1f,"
      "\"sockets\":%d,\"correct\":%s}\n",
      comm.rank(), comm.size(), formed_ms, reduced_ms, unix_ms, sockets, correct ? "true" : "false");
  std::fflush(stdout);
  if (Status st = comm.Barrier(); !st.ok()) {
    std::fprintf(stderr, "rm-bench-mesh-member: rank %d: barrier: %s\n", comm.rank(), st.ToString().c_str());
    return 1;
  }
  return correct ? 0 : 1;
}
