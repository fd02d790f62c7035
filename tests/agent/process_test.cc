// Multi-process tests: ringmaster-worker processes on 127.0.0.1, as
// `ringmaster run` starts them, including the SIGKILL and stall drills.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "free_ports.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Proc {
  pid_t pid = -1;
  std::string log;
  int status = -1;  // exit code, or 128 + signal
  double exited_at = 0;
};

std::string TfConfig(const std::vector<std::string>& addrs, int rank) {
  std::string chief = "\"chief\":[\"" + addrs[0] + "\"]";
  std::string workers = "\"worker\":[";
  for (size_t i = 1; i < addrs.size(); ++i) workers += (i > 1 ? ",\"" : "\"") + addrs[i] + "\"";
  workers += "]";
  std::string task = rank == 0 ? R"({"type":"chief","index":0})"
                               : R"({"type":"worker","index":)" + std::to_string(rank - 1) + "}";
  return "{\"cluster\":{" + chief + "," + workers + "},\"task\":" + task + ",\"environment\":\"cloud\"}";
}

// `wrapper`: a command the worker runs under (e.g. unshare), "" for none.
Proc Spawn(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
           const std::string& log, const std::vector<std::string>& wrapper = {}) {
  Proc p;
  p.log = log;
  p.pid = ::fork();
  if (p.pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    std::vector<std::string> copy = wrapper;
    copy.push_back(RINGMASTER_WORKER_PATH);
    copy.insert(copy.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return p;
}

// Waits for all; kills what is still running after `limit` seconds.
void WaitAll(std::vector<Proc>& ps, double limit, Clock::time_point start) {
  size_t left = ps.size();
  while (left > 0) {
    for (auto& p : ps) {
      if (p.status != -1) continue;
      int st = 0;
      pid_t r = ::waitpid(p.pid, &st, WNOHANG);
      if (r == p.pid) {
        p.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        p.exited_at = std::chrono::duration<double>(Clock::now() - start).count();
        --left;
      }
    }
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit) {
      for (auto& p : ps) {
        if (p.status == -1) ::kill(p.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// n TF_CONFIG addresses on 127.0.0.1, and the agents' own ports as
// RINGMASTER_PORT's per-member list (what `ringmaster run` gives them).
std::vector<std::string> LocalAddresses(int n, std::string* agent_ports) {
  auto ports = ringmaster::internal::FreeLocalPorts(2 * n);
  std::vector<std::string> addrs;
  agent_ports->clear();
  for (int r = 0; r < n; ++r) {
    addrs.push_back("127.0.0.1:" + std::to_string(ports.at(r)));
    *agent_ports += (r ? "," : "") + std::to_string(ports.at(n + r));
  }
  return addrs;
}

std::vector<Proc> RunGroup(int n, const std::vector<std::vector<std::string>>& args,
                           std::vector<std::pair<std::string, std::string>> env, double limit,
                           const std::string& tag) {
  std::string agent_ports;
  auto addrs = LocalAddresses(n, &agent_ports);
  std::vector<Proc> ps;
  auto start = Clock::now();
  for (int r = 0; r < n; ++r) {
    auto e = env;
    e.push_back({"TF_CONFIG", TfConfig(addrs, r)});
    e.push_back({"RINGMASTER_PORT", agent_ports});
    e.push_back({"RINGMASTER_FORMATION_TIMEOUT_SECONDS", "60"});
    std::string log = ::testing::TempDir() + "/rm_" + tag + "_" + std::to_string(::getpid()) + "_" +
                      std::to_string(r) + ".log";
    ps.push_back(Spawn(args[r], e, log));
  }
  WaitAll(ps, limit, start);
  return ps;
}

TEST(WorkerProcess, ChiefAndWorkersVerifyEveryStep) {
  std::vector<std::string> a = {"--model", "tiny", "--steps", "3"};
  auto ps = RunGroup(3, {a, a, a}, {{"RINGMASTER_BYTES_PER_PACK", "4096"}}, 120, "ok");
  for (auto& p : ps) {
    std::string out = Slurp(p.log);
    EXPECT_EQ(p.status, 0) << out;
    EXPECT_NE(out.find("3 steps verified"), std::string::npos) << out;
  }
}

TEST(WorkerProcess, EveryDtypeAndOpVerifies) {
  for (const char* dt : {"float16", "bfloat16", "int64"}) {
    for (const char* op : {"mean", "prod", "max"}) {
      std::vector<std::string> a = {"--model", "5x1001", "--steps", "1",      "--dtype",
                                    dt,        "--op",   op,        "--quiet"};
      auto ps = RunGroup(2, {a, a}, {}, 120, std::string("dt_") + dt + op);
      for (auto& p : ps) EXPECT_EQ(p.status, 0) << dt << " " << op << ": " << Slurp(p.log);
    }
  }
}

// The C API's all-gather-v, all-to-all and reduce-scatter (uneven and empty
// blocks), a uint8 all-reduce that wraps and a bool broadcast, in real
// processes, every element checked by the worker; then the narrow integer
// dtypes through the worker's own all-reduce check.
TEST(WorkerProcess, CApiVariableCollectivesAndNewDtypes) {
  std::vector<std::string> a = {"--check-c-api"};
  auto ps = RunGroup(4, {a, a, a, a}, {}, 120, "capi");
  for (auto& p : ps) {
    std::string out = Slurp(p.log);
    EXPECT_EQ(p.status, 0) << out;
    EXPECT_NE(out.find("c-api collectives verified (4 members)"), std::string::npos) << out;
    EXPECT_NE(out.find("device call on host memory refused: "), std::string::npos) << out;
  }
  for (const char* dt : {"uint8", "int16"}) {
    std::vector<std::string> w = {"--model", "3x1001", "--steps", "1",      "--dtype",
                                  dt,        "--op",   "sum",     "--quiet"};
    auto qs = RunGroup(2, {w, w}, {}, 120, std::string("dt_") + dt);
    for (auto& p : qs) EXPECT_EQ(p.status, 0) << dt << ": " << Slurp(p.log);
  }
}

TEST(WorkerProcess, SigkilledMemberMakesSurvivorsReportUnavailableWithinFiveSeconds) {
  std::vector<std::string> a = {"--model", "20x200000", "--steps", "4", "--quiet"};
  std::vector<std::string> crash = a;
  crash.insert(crash.end(), {"--crash-at-step", "1"});
  auto ps = RunGroup(3, {a, crash, a}, {{"RINGMASTER_RESTART_COUNT", "0"}}, 120, "crash");
  EXPECT_EQ(ps[1].status, 128 + SIGKILL) << Slurp(ps[1].log);
  for (int r : {0, 2}) {
    std::string out = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << out;
    EXPECT_NE(out.find(": Unavailable:"), std::string::npos) << out;
    EXPECT_EQ(out.find(": Aborted:"), std::string::npos) << out;
    EXPECT_NE(out.find("/job:worker/task:0"), std::string::npos) << out;  // the dead task is named
    EXPECT_LT(ps[r].exited_at - ps[1].exited_at, 5.0) << out;
  }
}

// The drills at eight members, where the link probe leaves most pairs
// without a data connection (they open on first use): every survivor still
// reports a SIGKILL naming the victim, and a stall is named by every member
// that waited.
TEST(WorkerProcess, AtEightEverySurvivorNamesASigkilledMember) {
  std::vector<std::string> a = {"--model", "20x20000", "--steps", "4", "--quiet"};
  std::vector<std::vector<std::string>> args(8, a);
  args[5].insert(args[5].end(), {"--crash-at-step", "1"});
  auto ps = RunGroup(8, args, {{"RINGMASTER_RESTART_COUNT", "0"}}, 120, "crash8");
  EXPECT_EQ(ps[5].status, 128 + SIGKILL) << Slurp(ps[5].log);
  for (int r = 0; r < 8; ++r) {
    if (r == 5) continue;
    std::string out = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << out;
    EXPECT_NE(out.find(": Unavailable: /job:worker/task:4 is unreachable from /job:"), std::string::npos)
        << out;
    EXPECT_LT(ps[r].exited_at - ps[5].exited_at, 5.0) << out;
  }
}

TEST(WorkerProcess, AtEightAStallIsNamedByEveryMemberThatWaited) {
  std::vector<std::string> a = {"--model", "tiny", "--steps", "4", "--quiet"};
  std::vector<std::vector<std::string>> args(8, a);
  args[6].insert(args[6].end(), {"--stall-at-step", "2"});
  auto ps = RunGroup(8, args, {{"RINGMASTER_TIMEOUT_SECONDS", "2"}}, 60, "stall8");
  for (int r = 0; r < 8; ++r) {
    std::string out = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << out;
    if (r == 6) continue;
    EXPECT_NE(out.find("DeadlineExceeded"), std::string::npos) << out;
    EXPECT_NE(out.find("/job:worker/task:5 never entered it"), std::string::npos) << out;
    EXPECT_LT(ps[r].exited_at, 30.0) << out;
  }
}

TEST(WorkerProcess, CrashDrillOnlyOnFirstStart) {
  std::vector<std::string> a = {"--model", "tiny", "--steps", "3", "--quiet"};
  std::vector<std::string> crash = a;
  crash.insert(crash.end(), {"--crash-at-step", "1"});
  auto ps = RunGroup(2, {a, crash}, {{"RINGMASTER_RESTART_COUNT", "1"}}, 120, "restarted");
  for (auto& p : ps) EXPECT_EQ(p.status, 0) << Slurp(p.log);
}

// In a container the worker is PID 1 of its PID namespace, which ignores
// the signals it sends itself, SIGKILL included: the crash drill must still
// end it, abruptly (exit 137), not carry on as it once did in pods.
TEST(WorkerProcess, CrashDrillEndsTheWorkerAsPid1) {
  std::string agent_ports;
  auto addrs = LocalAddresses(1, &agent_ports);
  const std::string log = ::testing::TempDir() + "/rm_pid1_" + std::to_string(::getpid()) + ".log";
  std::vector<Proc> ps;
  const auto start = Clock::now();
  ps.push_back(Spawn({"--model", "tiny", "--steps", "3", "--crash-at-step", "1"},
                     {{"TF_CONFIG", TfConfig(addrs, 0)}, {"RINGMASTER_PORT", agent_ports}}, log,
                     {"unshare", "--pid", "--fork", "--kill-child", "--"}));
  WaitAll(ps, 60, start);
  const std::string out = Slurp(log);
  ASSERT_EQ(out.find("unshare:"), std::string::npos) << "unshare failed (it needs root): " << out;
  EXPECT_NE(out.find("crashing at step 1 (drill)"), std::string::npos) << out;
  EXPECT_EQ(out.find("steps verified"), std::string::npos) << out;
  EXPECT_EQ(ps[0].status, 137) << out;
}

TEST(WorkerProcess, StalledMemberMakesOthersReportDeadlineExceeded) {
  std::vector<std::string> a = {"--model", "tiny", "--steps", "4", "--quiet"};
  std::vector<std::string> stall = a;
  stall.insert(stall.end(), {"--stall-at-step", "2"});
  auto ps = RunGroup(3, {a, a, stall}, {{"RINGMASTER_TIMEOUT_SECONDS", "2"}}, 60, "stall");
  for (int r : {0, 1}) {
    std::string out = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << out;
    EXPECT_NE(out.find("DeadlineExceeded"), std::string::npos) << out;
    EXPECT_LT(ps[r].exited_at, 30.0) << out;
  }
  // The stalled member learns of the abort and ends too (non-zero).
  EXPECT_EQ(ps[2].status, 1) << Slurp(ps[2].log);
}

// A member that stops answering without closing anything (SIGSTOP, like a
// lost host) is found by the heartbeats.
TEST(WorkerProcess, FrozenMemberIsFoundByHeartbeats) {
  std::string agent_ports;
  auto addrs = LocalAddresses(3, &agent_ports);
  std::vector<Proc> ps;
  auto start = Clock::now();
  for (int r = 0; r < 3; ++r) {
    ps.push_back(Spawn({"--model", "tiny", "--steps", "100000000", "--quiet"},
                       {{"TF_CONFIG", TfConfig(addrs, r)},
                        {"RINGMASTER_PORT", agent_ports},
                        {"RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS", "3"}},
                       ::testing::TempDir() + "/rm_frozen_" + std::to_string(::getpid()) + "_" +
                           std::to_string(r) + ".log"));
  }
  // Freeze worker 1 once the group has formed (each member prints its rank then).
  for (int r = 0; r < 3; ++r) {
    auto until = Clock::now() + std::chrono::seconds(60);
    while (Slurp(ps[r].log).find(" of 3,") == std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(ps[2].pid, SIGSTOP);
  std::vector<Proc> others{ps[0], ps[1]};
  WaitAll(others, 60, start);
  ::kill(ps[2].pid, SIGKILL);
  std::vector<Proc> frozen{ps[2]};
  WaitAll(frozen, 60, start);
  for (auto& p : others) {
    std::string out = Slurp(p.log);
    EXPECT_EQ(p.status, 1) << out;
    EXPECT_NE(out.find("Unavailable"), std::string::npos) << out;
    EXPECT_NE(out.find("/job:worker/task:1 is unreachable from /job:"), std::string::npos) << out;
    EXPECT_NE(out.find(": no heartbeat for"), std::string::npos) << out;
  }
}

// At eight members heartbeats go over the control overlay: the frozen
// member 3 is watched by its fingers (1, 2, 4, 5, 7) only, and members 0 and
// 6 learn of it from their abort frame, in the same words, naming it, within
// a second of the first.
TEST(WorkerProcess, AtEightAFrozenMemberIsNamedByEverySurvivor) {
  constexpr int kN = 8, kFrozen = 3;
  std::string agent_ports;
  auto addrs = LocalAddresses(kN, &agent_ports);
  std::vector<Proc> ps;
  auto start = Clock::now();
  for (int r = 0; r < kN; ++r) {
    ps.push_back(Spawn({"--model", "tiny", "--steps", "100000000", "--quiet"},
                       {{"TF_CONFIG", TfConfig(addrs, r)},
                        {"RINGMASTER_PORT", agent_ports},
                        {"RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS", "3"}},
                       ::testing::TempDir() + "/rm_frozen8_" + std::to_string(::getpid()) + "_" +
                           std::to_string(r) + ".log"));
  }
  for (int r = 0; r < kN; ++r) {
    auto until = Clock::now() + std::chrono::seconds(60);
    while (Slurp(ps[r].log).find(" of 8,") == std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(ps[kFrozen].pid, SIGSTOP);
  std::vector<Proc> others;
  for (int r = 0; r < kN; ++r)
    if (r != kFrozen) others.push_back(ps[r]);
  WaitAll(others, 60, start);
  ::kill(ps[kFrozen].pid, SIGKILL);
  std::vector<Proc> frozen{ps[kFrozen]};
  WaitAll(frozen, 60, start);
  double first = 1e9, last = 0;
  for (auto& p : others) {
    std::string out = Slurp(p.log);
    EXPECT_EQ(p.status, 1) << out;
    EXPECT_NE(out.find(": Unavailable: /job:worker/task:2 is unreachable from /job:"), std::string::npos)
        << out;
    EXPECT_NE(out.find(": no heartbeat for 3 s"), std::string::npos) << out;
    first = std::min(first, p.exited_at);
    last = std::max(last, p.exited_at);
  }
  EXPECT_LT(last - first, 1.0) << "the survivors that do not watch it heard of it late";
}

// With sparse control connections (each member to its fingers only, 5 of
// the 7 others at eight): member 6 is SIGKILLed in the middle of training.
// Members 1 and 3 are not its fingers (6 ± 1, 2, 4 is 0, 2, 4, 5, 7) and,
// with small all-reduces by recursive doubling, not its data partners
// either: they hold no connection to it and learn of it only from the
// abort flood. Every survivor reports it, naming the victim, within 5 s.
TEST(WorkerProcess, AtEightASigkilledMemberIsNamedEvenByMembersWithNoConnectionToIt) {
  constexpr int kN = 8, kVictim = 6;
  std::string agent_ports;
  auto addrs = LocalAddresses(kN, &agent_ports);
  std::vector<Proc> ps;
  auto start = Clock::now();
  for (int r = 0; r < kN; ++r) {
    ps.push_back(Spawn(
        {"--model", "tiny", "--steps", "100000000", "--quiet"},
        {{"TF_CONFIG", TfConfig(addrs, r)}, {"RINGMASTER_PORT", agent_ports}},
        ::testing::TempDir() + "/rm_kill8_" + std::to_string(::getpid()) + "_" + std::to_string(r) + ".log"));
  }
  for (int r = 0; r < kN; ++r) {
    auto until = Clock::now() + std::chrono::seconds(60);
    while (Slurp(ps[r].log).find(" of 8,") == std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(ps[kVictim].pid, SIGKILL);
  const double killed_at = std::chrono::duration<double>(Clock::now() - start).count();
  WaitAll(ps, 60, start);
  EXPECT_EQ(ps[kVictim].status, 128 + SIGKILL);
  for (int r = 0; r < kN; ++r) {
    if (r == kVictim) continue;
    std::string out = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << r << ": " << out;
    EXPECT_NE(out.find(": Unavailable: /job:worker/task:5 is unreachable from /job:"), std::string::npos)
        << r << ": " << out;
    EXPECT_LT(ps[r].exited_at - killed_at, 5.0) << r << ": " << out;
  }
}

TEST(WorkerProcess, SigtermReportsAndDiesOfIt) {
  // Worker 1 stalls (no timeout); SIGTERM to worker 0 (a pod deleted, or
  // `ringmaster run` stopping it): it reports the abort itself, with its
  // flight recorder and termination log, then dies of SIGTERM; the others
  // hear who was terminated.
  std::string agent_ports;
  auto addrs = LocalAddresses(3, &agent_ports);
  const std::string dir = ::testing::TempDir() + "/rm_term_" + std::to_string(::getpid());
  ASSERT_EQ(::system(("mkdir -p " + dir).c_str()), 0);
  std::vector<Proc> ps;
  auto start = Clock::now();
  for (int r = 0; r < 3; ++r) {
    ps.push_back(
        Spawn({"--model", "tiny", "--steps", "100", "--stall-at-step", "2", "--drill-task", "worker:1"},
              {{"TF_CONFIG", TfConfig(addrs, r)},
               {"RINGMASTER_PORT", agent_ports},
               {"RINGMASTER_FLIGHT_RECORDER_DIR", dir},
               {"RINGMASTER_TERMINATION_LOG", dir + "/term-" + std::to_string(r)}},
              dir + "/" + std::to_string(r) + ".log"));
  }
  auto until = Clock::now() + std::chrono::seconds(60);
  while (Slurp(ps[2].log).find("stalling at step 2") == std::string::npos && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(ps[1].pid, SIGTERM);
  WaitAll(ps, 60, start);
  const std::string out = Slurp(ps[1].log);
  EXPECT_EQ(ps[1].status, 128 + SIGTERM) << out;
  EXPECT_NE(
      out.find(
          "ringmaster: /job:worker/task:0: Aborted: aborted by /job:worker/task:0: terminated (SIGTERM)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("{\"ringmaster_flight_recorder\":1,"), std::string::npos) << out;
  EXPECT_NE(Slurp(dir + "/job-worker-task-0.json").find("\"cause\""), std::string::npos);
  EXPECT_EQ(Slurp(dir + "/term-1"), "Aborted: aborted by /job:worker/task:0: terminated (SIGTERM)\n");
  for (int r : {0, 2}) {
    std::string o = Slurp(ps[r].log);
    EXPECT_EQ(ps[r].status, 1) << o;
    EXPECT_NE(o.find("aborted by /job:worker/task:0: terminated (SIGTERM)"), std::string::npos) << o;
  }
}

// A group larger than the members' descriptor limit: formation fails at
// once naming RLIMIT_NOFILE and what to do (it used to retry socket() in
// silence until the formation deadline); with room under the hard limit,
// the soft one is raised and the group forms.
TEST(WorkerProcess, TooFewFileDescriptorsFailFormationAtOnceNamingTheLimit) {
  const int n = 4;  // 3 peers x (8 streams + 2) channels + the margin: about 95 descriptors
  for (const std::string limits : {"--nofile=48:48", "--nofile=48:4096"}) {
    const bool fits = limits == "--nofile=48:4096";
    std::string agent_ports;
    auto addrs = LocalAddresses(n, &agent_ports);
    std::vector<Proc> ps;
    const auto start = Clock::now();
    for (int r = 0; r < n; ++r) {
      const std::string log = ::testing::TempDir() + "/rm_nofile_" + std::to_string(::getpid()) + "_" +
                              std::to_string(fits) + "_" + std::to_string(r) + ".log";
      ps.push_back(Spawn({"--model", "tiny", "--steps", "2"},
                         {{"TF_CONFIG", TfConfig(addrs, r)},
                          {"RINGMASTER_PORT", agent_ports},
                          {"RINGMASTER_STREAMS", "8"},
                          {"RINGMASTER_FORMATION_TIMEOUT_SECONDS", "120"}},
                         log, {"prlimit", limits, "--"}));
    }
    WaitAll(ps, 100, start);  // liveness bound only: the failure comes at once
    for (auto& p : ps) {
      const std::string out = Slurp(p.log);
      if (fits) {
        EXPECT_EQ(p.status, 0) << out;
        EXPECT_NE(out.find("2 steps verified"), std::string::npos) << out;
      } else {
        EXPECT_NE(p.status, 0) << out;
        EXPECT_NE(out.find("too few file descriptors"), std::string::npos) << out;
        EXPECT_NE(out.find("RLIMIT_NOFILE"), std::string::npos) << out;
        EXPECT_NE(out.find("ulimit -n"), std::string::npos) << out;
      }
    }
  }
}

TEST(WorkerProcess, MalformedTfConfigExitsTwo) {
  Proc p =
      Spawn({"--steps", "1"}, {{"TF_CONFIG", "{\"cluster\": [1,"}}, ::testing::TempDir() + "/rm_bad.log");
  std::vector<Proc> ps{p};
  WaitAll(ps, 30, Clock::now());
  EXPECT_EQ(ps[0].status, 2) << Slurp(ps[0].log);
  EXPECT_NE(Slurp(ps[0].log).find("InvalidArgument"), std::string::npos);
}

}  // namespace
