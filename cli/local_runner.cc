// `ringmaster run`'s loop: each tick, one step of the job's state machine
// (PlanLocalStep) and its commands applied to the replicas' processes, their
// output relayed, their exits reaped, until the job ends. What a replica
// gets is container_env.h, its process replica_process.h, its files
// run_directory.h; the run's signals are run_signals.h and its closing
// lines run_summary.h.
#include "local_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>

#include "container_env.h"
#include "free_ports.h"
#include "line_splitter.h"
#include "local_plan.h"
#include "replica_process.h"
#include "ringmaster/job_key.h"
#include "ringmaster/job_state.h"
#include "ringmaster/replica_env.h"
#include "run_directory.h"
#include "run_signals.h"
#include "run_summary.h"

extern char** environ;

namespace ringmaster::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Replica {
  ReplicaKey key;
  pid_t pid = -1;
  int out_fd = -1;      // stdout+stderr of the process, read end
  LineSplitter output;  // its output, cut into lines
  ReplicaObservation obs;
  int starts = 0;
  bool stopped = false;                            // its last run ended because we stopped it
  std::string termination_log;                     // where its agent writes its verdict
  std::string message;                             // what its last run wrote there
  int64_t finished_ms = 0;                         // when its last run ended (ms into the run)
  std::optional<Clock::time_point> kill_deadline;  // SIGKILL after this
  std::optional<Clock::time_point> start_at;       // a restart waiting out its backoff
};

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Like kubelet's crash-loop backoff, shorter: 0.25 s doubling up to 5 s.
Clock::duration RestartDelay(int restart) {
  double s = 0.25;
  for (int i = 1; i < restart && s < 5; ++i) s *= 2;
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(s, 5.0)));
}

// Ports picked by binding to port 0: all held open together so no two
// replicas get the same one, then released just before the processes start.
std::vector<int> FreePorts(int count) {
  auto ports = internal::FreeLocalPorts(count);
  if (ports.empty() && count > 0) {
    throw std::runtime_error(std::string("cannot reserve a local port: ") + std::strerror(errno));
  }
  return ports;
}

class Runner {
 public:
  Runner(const DistributedJob& job, const LocalRunOptions& opts, std::ostream& out)
      : job_(job), opts_(opts), out_(out) {}

  int Run() {
    AssignAddresses();
    MakeJobKey();
    NoteScheduling();
    bool finished = false;
    while (!finished && !RunInterrupted()) {
      LocalStep step = PlanLocalStep(job_, status_, Observations(), std::time(nullptr));
      for (const auto& line : step.lines) Say(OfKind(line));
      tally_.Note(step);
      status_ = std::move(step.status);
      for (const auto& c : step.commands) Apply(c);
      finished = step.finished;
      if (!finished) Wait(opts_.tick_seconds);
    }
    // Whatever the outcome, no replica outlives the run.
    StopAll(/*prompt=*/RunInterrupted());
    Summary(std::chrono::duration<double>(Clock::now() - started_).count());
    if (RunInterrupted() && !finished) return 130;
    return status_.Is(ConditionType::kSucceeded) ? 0 : 1;
  }

 private:
  void Say(const std::string& line) { out_ << "[ringmaster] " << line << std::endl; }
  std::string OfKind(std::string text) const { return cli::OfKind(std::move(text), job_.name, opts_.kind); }

  void AssignAddresses() {
    LocalAddresses assigned = AssignLocalAddresses(job_, FreePorts);
    addresses_ = std::move(assigned.task);
    agent_ports_ = std::move(assigned.agent_ports);
  }

  // A queue, a priority class and a gang are a cluster's business: locally
  // every replica starts at once, never Queued (PlanLocalStep drops them).
  void NoteScheduling() {
    const SchedulingPolicy& p = job_.run_policy.scheduling_policy;
    if (p == SchedulingPolicy{}) return;
    Say("note: spec.runPolicy.schedulingPolicy" +
        (p.queue.empty() ? std::string() : " (queue " + p.queue + ")") +
        " applies on a cluster only: locally every replica starts at once");
  }

  // A fresh key for this run, which every replica's agent proves it holds:
  // 32 bytes from the kernel's CSPRNG in a 0600 file of the run's directory,
  // named by RINGMASTER_JOB_KEY_FILE. A job's keySecretRef names a Kubernetes
  // Secret, which has no local meaning.
  void MakeJobKey() {
    if (job_.key_secret_ref) {
      Say("note: spec.communication.keySecretRef (Secret " + job_.key_secret_ref->name +
          ") cannot be read locally: this run uses a fresh key of its own");
    }
    auto made = NewJobKey();
    if (!made.ok()) throw std::runtime_error("cannot make a job key: " + made.status().message());
    key_file_ = dir_.WriteKey(*made);
  }

  std::string LogPath(const ReplicaKey& key) { return dir_.LogPath(key.Name()); }

  std::vector<ReplicaObservation> Observations() const {
    std::vector<ReplicaObservation> out;
    for (const auto& [key, r] : replicas_) out.push_back(r.obs);
    return out;
  }

  void Apply(const LocalCommand& c) {
    switch (c.kind) {
      case LocalCommandKind::kStart:
        Start(c.key);
        break;
      case LocalCommandKind::kRestart: {
        auto& r = replicas_[c.key];
        if (r.pid > 0) Kill(r, SIGKILL);
        r.start_at = Clock::now() + RestartDelay(r.starts);
        r.obs.phase = ReplicaPhase::kPending;
        Say(c.key.Name() + ": restarting (start " + std::to_string(r.starts + 1) + ")");
        break;
      }
      case LocalCommandKind::kTerminate:
        if (auto it = replicas_.find(c.key); it != replicas_.end() && it->second.pid > 0)
          Terminate(it->second);
        break;
    }
  }

  // What the replica's container gets (container_env.h), with the runner's
  // addresses, ports, restart count, termination log and key.
  EnvMap ContainerEnvOf(const ReplicaKey& key, const nlohmann::json& container, int restart) {
    ReplicaEnvOptions opts;
    opts.address = [this](ReplicaType t, int i) { return addresses_.at({t, i}); };
    // Every task shares this host: one agent port per member, in rank order.
    opts.agent_ports = agent_ports_;
    opts.restart_count = restart;
    opts.termination_log = LogPath(key);
    opts.job_key_file = key_file_;
    std::vector<std::string> warnings;
    auto env = ContainerEnv(job_, key, container, opts, &warnings);
    for (const auto& w : warnings) Say("warning: " + w);
    if (!env.ok()) throw std::runtime_error(env.status().message());
    return std::move(*env);
  }

  void Start(const ReplicaKey& key) {
    auto& r = replicas_[key];
    if (r.out_fd >= 0) close(r.out_fd);
    r.key = key;
    r.output = LineSplitter();
    r.kill_deadline.reset();
    r.start_at.reset();
    r.obs = {key, ReplicaPhase::kRunning, 0, 0, false};
    r.message.clear();
    r.finished_ms = 0;
    const nlohmann::json& container = job_.Find(key.type)->pod_template["spec"]["containers"][0];
    const int restart = r.starts++;
    const EnvMap container_env = ContainerEnvOf(key, container, restart);
    // Each start writes its own verdict. A container's own path is read
    // too, but it is the user's file: not removed.
    unlink(LogPath(key).c_str());
    auto log = container_env.find(kEnvTerminationLog);
    r.termination_log = log == container_env.end() ? "" : log->second;
    std::vector<std::string> argv = ContainerArgv(container, container_env);  // $(VAR) expanded
    if (argv.empty()) {
      // Locally there is no image, so no entrypoint to fall back on.
      Say(key.Name() + ": containers[0] has no command or args to run locally");
      r.obs.phase = ReplicaPhase::kFailed;
      r.obs.exit_code = 127;
      return;
    }
    std::vector<std::string> inherited;
    for (char** e = environ; *e; ++e) inherited.emplace_back(*e);
    const SpawnedReplica spawned =
        SpawnReplica(std::move(argv), ProcessEnv(inherited, opts_.bin_dir, container_env));
    const pid_t pid = spawned.pid;
    r.pid = pid;
    r.out_fd = spawned.out_fd;
    Say(key.Name() + ": started pid " + std::to_string(pid) +
        (addresses_.count(key) ? " at " + addresses_[key] : std::string()));
  }

  void Kill(Replica& r, int sig) {
    if (r.pid > 0) kill(-r.pid, sig);
  }

  void Terminate(Replica& r) {
    if (r.obs.deleting) return;
    Kill(r, SIGTERM);
    r.obs.deleting = true;
    r.kill_deadline = Clock::now() + Seconds(opts_.grace_seconds);
  }

  void Drain(Replica& r) {
    char buf[16384];
    while (r.out_fd >= 0) {
      ssize_t n = read(r.out_fd, buf, sizeof buf);
      if (n > 0) {
        r.output.Feed(std::string_view(buf, static_cast<size_t>(n)), [&](std::string_view line) {
          out_ << "[" << r.key.Name() << "] " << line << "\n";
          if (auto step = ResumeStepOf(line)) tally_.resumed_after = *step;
        });
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      // EOF: the process and everything it started closed the pipe.
      close(r.out_fd);
      r.out_fd = -1;
    }
    out_.flush();
  }

  void FlushPartial(Replica& r) {
    if (auto rest = r.output.TakeRest()) out_ << "[" << r.key.Name() << "] " << *rest << std::endl;
  }

  // Reaps exited processes and turns them into observations.
  void Reap() {
    for (auto& [key, r] : replicas_) {
      if (r.pid <= 0) continue;
      int st = 0;
      pid_t got = waitpid(r.pid, &st, WNOHANG);
      if (got != r.pid) continue;
      Drain(r);
      FlushPartial(r);
      Kill(r, SIGKILL);  // anything it left behind in its group
      r.pid = -1;
      const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      const bool was_deleting = r.obs.deleting;
      r.obs.exit_code = code;
      r.obs.phase = code == 0 ? ReplicaPhase::kSucceeded : ReplicaPhase::kFailed;
      r.obs.deleting = false;
      r.stopped = was_deleting;
      r.message = ReadTerminationMessage(r.termination_log);
      r.finished_ms = std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
      Say(key.Name() + (was_deleting ? ": stopped" : ": exited") + " with code " + std::to_string(code) +
          (WIFSIGNALED(st) ? std::string(" (signal ") + strsignal(WTERMSIG(st)) + ")" : ""));
    }
  }

  void Wait(double seconds) {
    std::vector<pollfd> fds{{RunSignalFd(), POLLIN, 0}};
    std::vector<Replica*> owners{nullptr};
    for (auto& [key, r] : replicas_) {
      if (r.out_fd >= 0) {
        fds.push_back({r.out_fd, POLLIN, 0});
        owners.push_back(&r);
      }
    }
    int n = poll(fds.data(), fds.size(), static_cast<int>(seconds * 1000));
    if (n > 0) {
      if (fds[0].revents) DrainRunSignals();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents) Drain(*owners[i]);
      }
    }
    Reap();
    const auto now = Clock::now();
    for (auto& [key, r] : replicas_) {
      if (r.pid > 0 && r.kill_deadline && now >= *r.kill_deadline) Kill(r, SIGKILL);
      if (r.pid <= 0 && r.start_at && now >= *r.start_at) Start(key);
    }
  }

  bool AnyAlive() const {
    for (const auto& [key, r] : replicas_) {
      if (r.pid > 0) return true;
    }
    return false;
  }

  // Stops what still runs, as the kubelet stops a pod: unless `prompt`, the
  // replicas first get the grace period to exit by themselves (a group's
  // survivors report the failure and exit); then SIGTERM, and SIGKILL after
  // the grace period. Ctrl-C meanwhile turns the wait into SIGTERM at once.
  void StopAll(bool prompt) {
    const auto wait_until = Clock::now() + Seconds(prompt ? 0 : opts_.grace_seconds);
    while (AnyAlive() && Clock::now() < wait_until && !RunInterrupted()) Wait(0.05);
    for (auto& [key, r] : replicas_) {
      if (r.pid > 0) Terminate(r);
    }
    // Wait() sends SIGKILL at each one's deadline; this bounds the wait for
    // a process that outlives even that.
    const auto deadline = Clock::now() + Seconds(opts_.grace_seconds + 2);
    while (AnyAlive() && Clock::now() < deadline) Wait(0.05);
    for (auto& [key, r] : replicas_) {
      if (r.pid > 0) {
        Kill(r, SIGKILL);
        waitpid(r.pid, nullptr, 0);
        r.pid = -1;
      }
      if (r.out_fd >= 0) {
        Drain(r);
        FlushPartial(r);
        if (r.out_fd >= 0) close(r.out_fd);
        r.out_fd = -1;
      }
    }
  }

  void Summary(double seconds) {
    RunFacts f;
    f.job = job_.name;
    f.kind = opts_.kind;
    f.status = &status_;
    f.interrupted = RunInterrupted();
    f.seconds = seconds;
    for (const auto& [key, r] : replicas_)
      f.replicas.push_back({key.Name(), r.starts, r.obs.exit_code, r.stopped, r.message, r.finished_ms});
    f.recoveries = tally_;
    WriteRunSummary(f, out_);
  }

  const DistributedJob& job_;
  const LocalRunOptions& opts_;
  std::ostream& out_;
  JobStatus status_;
  const Clock::time_point started_ = Clock::now();
  std::map<ReplicaKey, std::string> addresses_;
  std::vector<int> agent_ports_;  // RINGMASTER_PORT: the agents' ports in rank order
  RunDirectory dir_;              // the replicas' termination logs and the key
  std::string key_file_;          // RINGMASTER_JOB_KEY_FILE: this run's key (0600)
  std::map<ReplicaKey, Replica> replicas_;
  RecoveryTally tally_;  // for the summary
};

}  // namespace

int RunLocally(const DistributedJob& job, const LocalRunOptions& options, std::ostream& out) {
  if (std::string error = InstallRunSignals(); !error.empty()) {
    out << "[ringmaster] " << error << std::endl;
    return 1;
  }
  int rc = 1;
  try {
    rc = Runner(job, options, out).Run();
  } catch (const std::exception& e) {
    out << "[ringmaster] error: " << e.what() << std::endl;
  }
  RemoveRunSignals();
  return rc;
}

}  // namespace ringmaster::cli
