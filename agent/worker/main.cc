// ringmaster-worker: the program the example jobs run. It joins the group
// from TF_CONFIG and RINGMASTER_* exactly as a training process linking the
// agent would, all-reduces synthetic gradients shaped like a real model every
// step, verifies every element exactly, and prints per-step time and bus
// bandwidth. Fault drills: --stall-at-step, --crash-at-step; --recover
// keeps a survivor's process through a member's failure (recovery in place).
//
// Exit codes: 0 ok, 1 a collective failed, 2 bad configuration or flags,
// 3 a result was wrong.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "c_api_check.h"
#include "collectives/dtype_visit.h"
#include "collectives/kernels.h"
#include "flags.h"
#include "model.h"
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/env_vars.h"

namespace {

using namespace ringmaster;

// One line, one write: the agent's own threads write their reports to the
// same stderr, and `std::cerr << a << b` is a write per piece.
template <typename... Parts>
void ErrLine(const Parts&... parts) {
  std::ostringstream line;
  (line << ... << parts);
  line << '\n';
  std::cerr << line.str() << std::flush;
}

using Clock = std::chrono::steady_clock;

// Wall-clock milliseconds, for lining up lines of different processes.
long long UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The value member `rank` contributes for element i of tensor t at `step`:
// small integers, so every sum, product and mean is exact (or rounds the
// same way everywhere) in every dtype.
int64_t Contribution(ReduceOp op, int rank, size_t t, int64_t i, int step) {
  if (op == ReduceOp::kProduct) return ((i + static_cast<int64_t>(t) + step + rank) % 2) + 1;
  return ((i * 7 + static_cast<int64_t>(t) * 3 + step + rank * 5) % 5) + 1;
}

void Store(DataType dt, void* base, int64_t i, double v) {
  internal::StoreElement(dt, base, static_cast<size_t>(i), v);
}
double Load(DataType dt, const void* base, int64_t i) {
  return internal::LoadElement(dt, base, static_cast<size_t>(i));
}

// The exact expected value, computed from every member's contribution.
double Expected(DataType dt, ReduceOp op, int n, size_t t, int64_t i, int step) {
  int64_t acc = Contribution(op, 0, t, i, step);
  for (int r = 1; r < n; ++r) {
    int64_t c = Contribution(op, r, t, i, step);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        acc += c;
        break;
      case ReduceOp::kProduct:
        acc *= c;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, c);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, c);
        break;
    }
  }
  if (op != ReduceOp::kMean) return static_cast<double>(acc);
  // The division happens in the dtype: halves through float, integers
  // truncate (bool is never reduced: --dtype refuses it).
  return internal::VisitDType(
      dt,
      [&](auto tag) {
        using Tag = decltype(tag);
        if constexpr (Tag::kDType == DataType::kFloat64) return static_cast<double>(acc) / n;
        if constexpr (Tag::kFloating)
          return static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
        return static_cast<double>(acc / n);
      },
      [] { return 0.0; });
}

double Rounded(DataType dt, double v) {
  // What `v` becomes once stored in dt (the result of MEAN for halves).
  if (dt != DataType::kFloat16 && dt != DataType::kBFloat16) return v;  // exact already
  alignas(8) char tmp[8];
  Store(dt, tmp, 0, v);
  return Load(dt, tmp, 0);
}

// TF_CONFIG and RINGMASTER_*, as this process sees them, so that a test can
// compare them with what the operator or `ringmaster run` set.
void PrintEnv() {
  std::vector<std::string> lines;
  for (char** e = environ; *e; ++e) {
    std::string_view kv = *e;
    if (kv.starts_with("TF_CONFIG=") || kv.starts_with("RINGMASTER_"))
      lines.push_back("env " + std::string(kv));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  std::cout << out << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  worker::Flags f;
  if (auto exit_code = worker::ParseFlags(argc, argv, &f)) return *exit_code;
  if (f.print_env) PrintEnv();
  auto shapes = worker::ModelByName(f.model);
  if (!shapes.ok()) return std::cerr << "ringmaster-worker: " << shapes.status().ToString() << "\n", 2;

  auto settings = CommunicatorSettings::FromEnvironment();
  if (!settings.ok()) {
    if (settings.status().code() == StatusCode::kFailedPrecondition) {
      std::cout << "ringmaster-worker: " << settings.status().message() << "; nothing to do\n";
      return 0;
    }
    std::cerr << "ringmaster-worker: " << settings.status().ToString() << "\n";
    return 2;
  }
  // The job's runPolicy.recovery InPlace (replica_env.h) turns --recover on.
  if (const char* r = std::getenv(kEnvRecovery); r && std::string_view(r) == "InPlace") f.recover = true;
  const char* restarts = std::getenv(kEnvRestartCount);
  const bool first_start = !restarts || !*restarts || std::string(restarts) == "0";
  const std::string me = settings->group.members[*settings->group.rank].TaskName();

  {
    const auto& m = settings->group.members[*settings->group.rank];
    if (!f.drill_task.empty() && f.drill_task != m.task_type + ":" + std::to_string(m.task_index)) {
      f.stall_at = f.crash_at = -1;  // the drills are for another task
      f.crash_in_recovery = false;
    }
  }
  auto comm_or = Communicator::Create(*settings);
  if (!comm_or.ok()) {
    ErrLine("ringmaster-worker ", me, ": ", comm_or.status().ToString());
    return 1;
  }
  auto comm = std::move(*comm_or);
  int n = comm->size();  // with an elastic size it changes with each formation
  const auto& sizes = *shapes;
  size_t total_bytes = 0;
  std::vector<std::vector<char>> storage;
  std::vector<Tensor> tensors;
  for (int64_t c : sizes) {
    storage.emplace_back(static_cast<size_t>(c) * DataTypeSize(f.dtype));
    tensors.push_back(Tensor{storage.back().data(), c, f.dtype});
    total_bytes += storage.back().size();
  }
  std::cout << "ringmaster-worker " << me << ": rank " << comm->rank() << " of " << n << ", model " << f.model
            << " (" << sizes.size() << " tensors, " << total_bytes << " bytes, " << DataTypeName(f.dtype)
            << "), op " << ReduceOpName(f.op) << ", " << f.steps << " steps" << std::endl;

  // With --recover, the state a member holds apart from its gradients (as
  // a trainer holds its weights): the result of its last completed step,
  // which a failed step's all-reduce leaves alone, and the size of the group
  // that computed it (an elastic group's size changes).
  std::vector<std::vector<char>> state_storage;
  std::vector<Tensor> state;
  int64_t state_n = n;
  if (f.recover) {
    for (size_t t = 0; t < sizes.size(); ++t) {
      state_storage.emplace_back(storage[t].size());
      state.push_back(Tensor{state_storage.back().data(), sizes[t], f.dtype});
    }
    state.push_back(Tensor{&state_n, 1, DataType::kInt64});
  }
  // Checks every element of `bufs` against `step`'s result in a group of `size`.
  auto verify = [&](const std::vector<std::vector<char>>& bufs, int step, int size, const char* what) {
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (int64_t i = 0; i < sizes[t]; ++i) {
        double want = Rounded(f.dtype, Expected(f.dtype, f.op, size, t, i, step));
        double got = Load(f.dtype, bufs[t].data(), i);
        if (!(got == want)) {
          ErrLine("ringmaster-worker ", me, ": step ", step, ": WRONG RESULT ", what, " in tensor ", t,
                  " element ", i, ": got ", got, ", want ", want);
          return false;
        }
      }
    }
    return true;
  };
  // Recovery in place: agree where to resume (`done`: our last completed
  // step, -1 for none held), take the state from the root, verify it.
  // `reform`: form the group again first (a survivor). A member failing
  // meanwhile (the group's error) starts it over, up to kRecoveryAttempts;
  // a member that did not take the whole state holds none. Returns the step
  // to run next, or -1 when the group cannot go on (a formation that timed
  // out names who did not come back).
  constexpr int kRecoveryAttempts = 3;
  auto recover = [&](int done, bool reform, Clock::time_point failed_at) -> int {
    for (int attempt = 0; attempt < kRecoveryAttempts; ++attempt) {
      if (reform || attempt > 0) {
        if (Status re = comm->Reform(); !re.ok()) {
          ErrLine("ringmaster-worker ", me, ": recovery: forming the group again: ", re.ToString());
          return -1;
        }
      }
      if (f.crash_in_recovery && first_start && reform) {
        std::cout << "ringmaster-worker " << me << ": crashing in the recovery (drill)" << std::endl;
        ::raise(SIGKILL);
        std::_Exit(128 + SIGKILL);  // PID 1 of a container: see the crash drill below
      }
      auto p = comm->AgreeOnResume(done);
      if (!p.ok()) {
        ErrLine("ringmaster-worker ", me, ": recovery: ", p.status().ToString());
        continue;
      }
      if (p->step < 0) return 0;  // a first start: nobody holds state
      if (Status st = comm->Broadcast(state, p->root); !st.ok()) {
        ErrLine("ringmaster-worker ", me, ": recovery: taking the state of step ", p->step, ": ",
                st.ToString());
        if (comm->rank() != p->root) done = -1;  // partly overwritten
        continue;
      }
      if (!verify(state_storage, static_cast<int>(p->step), static_cast<int>(state_n),
                  "after the recovery's broadcast"))
        return -1;
      n = comm->size();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - failed_at).count();
      std::cout << "ringmaster-worker " << me << ": " << (reform ? "recovered" : "joined a running group")
                << ": resuming after step " << p->step << " from rank " << p->root << " (" << std::fixed
                << std::setprecision(1) << ms << " ms, at unix ms " << UnixMs() << ")" << std::defaultfloat
                << std::endl;
      return static_cast<int>(p->step) + 1;
    }
    ErrLine("ringmaster-worker ", me, ": recovery: gave up after ", kRecoveryAttempts, " attempts");
    return -1;
  };
  int first = 0;
  if (f.recover) {
    first = recover(-1, /*reform=*/false, Clock::now());  // a new incarnation takes a running group's state
    if (first < 0) return 1;
  }
  int recoveries = 0;
  for (int step = first; step < f.steps; ++step) {
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (int64_t i = 0; i < sizes[t]; ++i) {
        Store(f.dtype, storage[t].data(), i,
              static_cast<double>(Contribution(f.op, comm->rank(), t, i, step)));
      }
    }
    if (step == f.stall_at) {
      std::cout << "ringmaster-worker " << me << ": stalling at step " << step << " (drill)" << std::endl;
      auto until = std::chrono::steady_clock::now() + std::chrono::hours(1);
      while (comm->health().ok() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      ErrLine("ringmaster-worker ", me, ": stalled; the group ended: ", comm->health().ToString());
      return 1;
    }
    auto start = std::chrono::steady_clock::now();
    Status st;
    if (step == f.crash_at && first_start) {
      auto h = comm->AllReduceAsync(tensors, f.op);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::cout << "ringmaster-worker " << me << ": crashing at step " << step << " (drill) at unix ms "
                << UnixMs() << std::endl;
      ::raise(SIGKILL);
      // Still here: we are PID 1 of a PID namespace (a container without an
      // init), which ignores signals it sends itself, SIGKILL included. Die
      // as abruptly: no destructor, no goodbye; the kernel closes our
      // sockets as it would for SIGKILL, and the pod reports exit 137.
      std::_Exit(128 + SIGKILL);
      st = h.Wait();
    } else if (f.async) {
      st = comm->AllReduceAsync(tensors, f.op).Wait();
    } else {
      st = comm->AllReduce(tensors, f.op);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok()) {
      ErrLine("ringmaster-worker ", me, ": step ", step, ": ", st.ToString());
      // Members that disagree on a collective would disagree again.
      if (!f.recover || st.code() == StatusCode::kInvalidArgument) return 1;
      const int next = recover(step - 1, /*reform=*/true, Clock::now());
      if (next < 0) return 1;
      ++recoveries;
      step = next - 1;  // the loop's ++ runs it
      continue;
    }
    if (!verify(storage, step, n, "")) return 3;
    for (size_t t = 0; t < state_storage.size(); ++t) state_storage[t] = storage[t];
    state_n = n;
    if (!f.quiet) {
      double algbw = secs > 0 ? total_bytes / secs / 1e9 : 0;
      double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
      std::cout << "ringmaster-worker " << me << ": step " << step << ": " << std::fixed
                << std::setprecision(2) << secs * 1e3 << " ms, algbw " << algbw << " GB/s, busbw " << busbw
                << " GB/s, verified" << std::defaultfloat << std::endl;
    }
    // The step is committed. An elastic group lets a member that waits back
    // in here (a collective only with an elastic size): all re-form, and it
    // takes the state as a new incarnation does.
    if (f.recover && step + 1 < f.steps) {
      auto joiners = comm->AgreeOnJoiners();
      if (!joiners.ok() || *joiners > 0) {
        if (!joiners.ok())
          ErrLine("ringmaster-worker ", me, ": step ", step, ": ", joiners.status().ToString());
        const int next = recover(step, /*reform=*/true, Clock::now());
        if (next < 0) return 1;
        ++recoveries;
        step = next - 1;  // the loop's ++ runs it
        continue;
      }
    }
  }
  std::cout << "ringmaster-worker " << me << ": " << f.steps << " steps verified";
  if (f.recover) std::cout << " (" << recoveries << " recoveries in place)";
  std::cout << std::endl;
  return 0;
}
