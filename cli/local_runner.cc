#include "local_runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

#include "free_ports.h"
#include "local_plan.h"
#include "ringmaster/env_expand.h"
#include "ringmaster/job_key.h"
#include "ringmaster/job_state.h"
#include "ringmaster/join_list.h"
#include "ringmaster/replica_env.h"
#include "ringmaster/verdict.h"

extern char** environ;

namespace ringmaster::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Written by the signal handler, read by the poll loop.
int g_signal_pipe[2] = {-1, -1};
volatile sig_atomic_t g_interrupted = 0;

void OnSignal(int sig) {
  if (sig == SIGINT || sig == SIGTERM) g_interrupted = 1;
  int saved = errno;
  char c = static_cast<char>(sig);
  [[maybe_unused]] auto n = write(g_signal_pipe[1], &c, 1);
  errno = saved;
}

constexpr size_t kMaxLine = 64 * 1024;  // longer lines are cut: output stays bounded

struct Replica {
  ReplicaKey key;
  pid_t pid = -1;
  int out_fd = -1;  // stdout+stderr of the process, read end
  std::string partial;
  ReplicaObservation obs;
  int starts = 0;
  bool stopped = false;                            // its last run ended because we stopped it
  std::string termination_log;                     // where its agent writes its verdict
  std::string message;                             // what its last run wrote there
  int64_t finished_ms = 0;                         // when its last run ended (ms into the run)
  std::optional<Clock::time_point> kill_deadline;  // SIGKILL after this
  std::optional<Clock::time_point> start_at;       // a restart waiting out its backoff
};

// Like kubelet's crash-loop backoff, shorter: 0.25 s doubling up to 5 s.
// The job's Failed condition, when it has one that is true.
const Condition* FailedCondition(const JobStatus& status) {
  for (auto it = status.conditions.rbegin(); it != status.conditions.rend(); ++it)
    if (it->type == ConditionType::kFailed && it->status && !it->message.empty()) return &*it;
  return nullptr;
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

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

  ~Runner() { RemoveLogDir(); }

  int Run() {
    AssignAddresses();
    MakeLogDir();
    MakeJobKey();
    NoteScheduling();
    bool finished = false;
    while (!finished && !g_interrupted) {
      LocalStep step = PlanLocalStep(job_, status_, Observations(), std::time(nullptr));
      for (const auto& line : step.lines) Say(OfKind(line));
      NoteRecoveries(step);
      status_ = std::move(step.status);
      for (const auto& c : step.commands) Apply(c);
      finished = step.finished;
      if (!finished) Wait(opts_.tick_seconds);
    }
    // Whatever the outcome, no replica outlives the run.
    StopAll(/*prompt=*/g_interrupted != 0);
    Summary(std::chrono::duration<double>(Clock::now() - started_).count());
    if (g_interrupted && !finished) return 130;
    return status_.Is(ConditionType::kSucceeded) ? 0 : 1;
  }

 private:
  void Say(const std::string& line) { out_ << "[ringmaster] " << line << std::endl; }
  // The job's conditions and events speak of the DistributedJob it runs as;
  // a TFJob's run names the kind its file wrote.
  std::string OfKind(std::string text) const {
    const std::string ours = "DistributedJob " + job_.name;
    if (opts_.kind == "DistributedJob") return text;
    for (size_t at = text.find(ours); at != std::string::npos; at = text.find(ours, at))
      text.replace(at, ours.size(), opts_.kind + " " + job_.name);
    return text;
  }

  // What the summary tells of the recoveries in place: how many, how long
  // each took, how small the group ran, who was not back at the end.
  void NoteRecoveries(const LocalStep& step) {
    recoveries_ += static_cast<int>(step.recoveries_begun.size());
    for (const auto& [key, seconds] : step.recoveries_ended)
      recovered_.push_back(key.Name() + " back after " + std::to_string(seconds) + "s");
    if (!step.finished) not_back_ = step.status.replacements;
    const Condition* running = step.status.Find(ConditionType::kRunning);
    if (running && running->status && running->reason == "RunningShrunk" &&
        (fewest_workers_ < 0 || step.status.workers_active < fewest_workers_))
      fewest_workers_ = step.status.workers_active;
  }

  void AssignAddresses() {
    int members = 0;
    for (const auto& [type, spec] : job_.replica_specs) {
      if (type != ReplicaType::kEvaluator) members += spec.replicas;
    }
    // Two ports per task: TF_CONFIG's (TensorFlow's server takes it) and
    // the agent's. Every task shares this host, so each agent needs its own;
    // they go to every task as RINGMASTER_PORT's per-member list, in the
    // group's rank order (chief, then workers), so members find the leader.
    auto ports = FreePorts(2 * members);
    size_t next = 0;
    for (const auto& [type, spec] : job_.replica_specs) {
      for (int i = 0; type != ReplicaType::kEvaluator && i < spec.replicas; ++i) {
        addresses_[{type, i}] = "127.0.0.1:" + std::to_string(ports[next++]);
      }
    }
    agent_ports_.clear();
    for (ReplicaType type : {ReplicaType::kChief, ReplicaType::kWorker}) {
      const ReplicaSpec* spec = job_.Find(type);
      for (int i = 0; spec && i < spec->replicas; ++i) agent_ports_.push_back(ports[next++]);
    }
  }

  // The replicas' termination logs live in a directory of this run's own.
  void MakeLogDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ringmaster-run.XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      throw std::runtime_error("cannot create a directory for the termination logs in " + tmpl + ": " +
                               std::strerror(errno));
    }
    log_dir_ = tmpl;
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
    std::string& key = *made;
    const std::string path = log_dir_ + "/job-key";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int err = errno;
      explicit_bzero(key.data(), key.size());
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(err));
    }
    key_file_ = path;
    // The mode is exactly 0600 whatever the umask.
    bool ok = fchmod(fd, 0600) == 0;
    for (size_t off = 0; ok && off < key.size();) {
      const ssize_t n = write(fd, key.data() + off, key.size() - off);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) off += static_cast<size_t>(n);
    }
    const int err = errno;
    ok = close(fd) == 0 && ok;
    explicit_bzero(key.data(), key.size());
    if (!ok) throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
  }

  std::string LogPath(const ReplicaKey& key) const {
    return log_dir_ + "/" + key.Name() + ".termination-log";
  }

  void RemoveLogDir() {
    if (log_dir_.empty()) return;
    if (!key_file_.empty()) unlink(key_file_.c_str());
    key_file_.clear();
    for (const auto& [key, r] : replicas_) unlink(LogPath(key).c_str());
    rmdir(log_dir_.c_str());
    log_dir_.clear();
  }

  // At most what the kubelet keeps of a termination message.
  static std::string ReadMessage(const std::string& path) {
    if (path.empty()) return "";
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    std::string text(kMaxTerminationMessage, '\0');
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(fd);
    text.resize(got);
    return text;
  }

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

  // The container's environment as a kubelet would give it: its env list in
  // order (each value expanded against the entries before it), then the
  // replica environment the operator injects (BuildReplicaEnv) where the
  // container does not set it. TF_CONFIG and RINGMASTER_RESTART_COUNT are
  // always ours: locally only loopback addresses work, and the count is
  // this runner's.
  std::map<std::string, std::string> ContainerEnv(const ReplicaKey& key, const nlohmann::json& container,
                                                  int restart) {
    std::map<std::string, std::string> env;
    auto lookup = [&env](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    if (auto it = container.find("env"); it != container.end() && it->is_array()) {
      for (const auto& var : *it) {
        if (!var.is_object() || !var.contains("name")) continue;
        if (var.contains("value") && var["value"].is_string()) {
          env[var["name"].get<std::string>()] = ExpandKubeVars(var["value"].get<std::string>(), lookup);
        } else if (var.contains("valueFrom")) {
          Say("warning: " + key.Name() + ": env " + var["name"].get<std::string>() +
              " uses valueFrom, which has no local meaning: not set");
        }
      }
    }
    ReplicaEnvOptions opts;
    opts.address = [this](ReplicaType t, int i) { return addresses_.at({t, i}); };
    // Every task shares this host: one agent port per member, in rank order.
    opts.agent_ports = agent_ports_;
    opts.restart_count = restart;
    opts.termination_log = LogPath(key);
    opts.job_key_file = key_file_;
    auto ours = BuildReplicaEnv(job_, key, opts);
    if (!ours.ok()) throw std::runtime_error(key.Name() + ": " + ours.status().message());
    for (const auto& [k, v] : *ours) {
      if (k == kEnvTfConfig || k == kEnvRestartCount) {
        env[k] = v;
      } else {
        env.emplace(k, v);
      }
    }
    return env;
  }

  // The process environment: this shell's, with PATH led by the build's bin
  // directory, and the container's on top.
  std::vector<std::string> ProcessEnv(const std::map<std::string, std::string>& container_env) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    std::string path = env.count("PATH") ? env["PATH"] : "/usr/bin:/bin";
    if (!opts_.bin_dir.empty()) env["PATH"] = opts_.bin_dir + ":" + path;
    for (const auto& [k, v] : container_env) env[k] = v;
    std::vector<std::string> out;
    for (const auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
  }

  void Start(const ReplicaKey& key) {
    auto& r = replicas_[key];
    if (r.out_fd >= 0) close(r.out_fd);
    r.key = key;
    r.partial.clear();
    r.kill_deadline.reset();
    r.start_at.reset();
    r.obs = {key, ReplicaPhase::kRunning, 0, 0, false};
    r.message.clear();
    r.finished_ms = 0;
    const nlohmann::json& container = job_.Find(key.type)->pod_template["spec"]["containers"][0];
    const int restart = r.starts++;
    const auto container_env = ContainerEnv(key, container, restart);
    // Each start writes its own verdict. A container's own path is read
    // too, but it is the user's file: not removed.
    unlink(LogPath(key).c_str());
    auto log = container_env.find(kEnvTerminationLog);
    r.termination_log = log == container_env.end() ? "" : log->second;
    auto lookup = [&container_env](std::string_view name) -> std::optional<std::string> {
      auto it = container_env.find(std::string(name));
      if (it == container_env.end()) return std::nullopt;
      return it->second;
    };
    std::vector<std::string> argv;  // $(VAR) expanded as the kubelet does
    for (const char* list : {"command", "args"}) {
      if (auto it = container.find(list); it != container.end() && it->is_array()) {
        for (const auto& a : *it) argv.push_back(ExpandKubeVars(a.get<std::string>(), lookup));
      }
    }
    if (argv.empty()) {
      // Locally there is no image, so no entrypoint to fall back on.
      Say(key.Name() + ": containers[0] has no command or args to run locally");
      r.obs.phase = ReplicaPhase::kFailed;
      r.obs.exit_code = 127;
      return;
    }
    auto env = ProcessEnv(container_env);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      // Own process group: stopping a replica stops everything it started.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(137);  // the runner died before prctl took hold
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGCHLD, SIG_DFL);
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
      // execvpe would search the runner's PATH, not the replica's.
      environ = cenv.data();
      execvp(cargv[0], cargv.data());
      dprintf(STDERR_FILENO, "cannot run '%s': %s\n", cargv[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    r.pid = pid;
    r.out_fd = fds[0];
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
        r.partial.append(buf, static_cast<size_t>(n));
        size_t start = 0, nl;
        while ((nl = r.partial.find('\n', start)) != std::string::npos) {
          const std::string_view line = std::string_view(r.partial).substr(start, nl - start);
          out_ << "[" << r.key.Name() << "] " << line << "\n";
          if (auto step = ResumeStepOf(line)) resumed_after_ = *step;
          start = nl + 1;
        }
        r.partial.erase(0, start);
        if (r.partial.size() > kMaxLine) {
          out_ << "[" << r.key.Name() << "] " << r.partial << "\n";
          r.partial.clear();
        }
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
    if (!r.partial.empty()) out_ << "[" << r.key.Name() << "] " << r.partial << std::endl;
    r.partial.clear();
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
      r.message = ReadMessage(r.termination_log);
      r.finished_ms = std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
      Say(key.Name() + (was_deleting ? ": stopped" : ": exited") + " with code " + std::to_string(code) +
          (WIFSIGNALED(st) ? std::string(" (signal ") + strsignal(WTERMSIG(st)) + ")" : ""));
    }
  }

  void Wait(double seconds) {
    std::vector<pollfd> fds{{g_signal_pipe[0], POLLIN, 0}};
    std::vector<Replica*> owners{nullptr};
    for (auto& [key, r] : replicas_) {
      if (r.out_fd >= 0) {
        fds.push_back({r.out_fd, POLLIN, 0});
        owners.push_back(&r);
      }
    }
    int n = poll(fds.data(), fds.size(), static_cast<int>(seconds * 1000));
    if (n > 0) {
      if (fds[0].revents) {
        char sink[64];
        while (read(g_signal_pipe[0], sink, sizeof sink) > 0) {
        }
      }
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
    while (AnyAlive() && Clock::now() < wait_until && !g_interrupted) Wait(0.05);
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
    const Condition* end = status_.Find(ConditionType::kSucceeded);
    if (!end || !end->status) end = status_.Find(ConditionType::kFailed);
    std::string verdict = g_interrupted && !status_.Finished()    ? "Interrupted"
                          : status_.Is(ConditionType::kSucceeded) ? "Succeeded"
                                                                  : "Failed";
    out_ << "[ringmaster] job " << job_.name << ": " << verdict;
    if (end && end->status) out_ << " (" << end->reason << ": " << OfKind(end->message) << ")";
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", seconds);
    out_ << " after " << secs << "s, " << status_.restart_count << " restarts\n";
    for (const auto& [key, r] : replicas_) {
      out_ << "[ringmaster]   " << key.Name() << ": started " << r.starts << "x, last exit code "
           << r.obs.exit_code << (r.stopped ? " (stopped by ringmaster)" : "") << "\n";
    }
    if (recoveries_ > 0) {
      out_ << "[ringmaster]   recoveries in place: " << recoveries_;
      if (!recovered_.empty()) out_ << " (" << JoinList(recovered_) << ")";
      // The members' word (their output), not the state machine's.
      if (resumed_after_) out_ << "; the group last resumed after step " << *resumed_after_;
      out_ << "\n";
      if (fewest_workers_ >= 0)
        out_ << "[ringmaster]   ran shrunk: down to " << fewest_workers_ << " of " << status_.workers_wanted
             << " workers\n";
      if (!not_back_.empty()) {
        out_ << "[ringmaster]   not back when the run ended: "
             << JoinList(not_back_, [](const auto& n) { return n.first.Name(); }) << "\n";
      }
    }
    if (verdict == "Failed") {
      // Who the culprit is, in the words of the replica that said so first.
      std::vector<ReplicaExit> exits;  // rank order: chief, then workers
      for (const auto& [key, r] : replicas_)
        exits.push_back({key.Name(), r.obs.exit_code, r.message, r.finished_ms});
      if (auto chosen = ChooseVerdict(exits)) {
        out_ << "[ringmaster] verdict: " << exits[*chosen].replica << ": "
             << OneLine(exits[*chosen].message, kMaxTerminationMessage) << "\n";
      } else if (const Condition* failed = FailedCondition(status_)) {
        // No replica said why (a SIGKILL leaves no word): the job's own
        // reason, which names the replica and its exit.
        out_ << "[ringmaster] verdict: " << failed->reason << ": "
             << OneLine(failed->message, kMaxVerdictMessage) << "\n";
      }
    }
    out_.flush();
  }

  const DistributedJob& job_;
  const LocalRunOptions& opts_;
  std::ostream& out_;
  JobStatus status_;
  const Clock::time_point started_ = Clock::now();
  std::map<ReplicaKey, std::string> addresses_;
  std::vector<int> agent_ports_;  // RINGMASTER_PORT: the agents' ports in rank order
  std::string log_dir_;           // the replicas' termination logs
  std::string key_file_;          // RINGMASTER_JOB_KEY_FILE: this run's key (0600)
  std::map<ReplicaKey, Replica> replicas_;
  int recoveries_ = 0;                      // recoveries in place begun
  std::vector<std::string> recovered_;      // "worker-1 back after 2s"
  std::map<ReplicaKey, int64_t> not_back_;  // being replaced at the last step before the end
  int fewest_workers_ = -1;                 // fewest running while RunningShrunk; -1: never
  std::optional<int64_t> resumed_after_;    // the last "resuming after step N" a member printed
};

}  // namespace

int RunLocally(const DistributedJob& job, const LocalRunOptions& options, std::ostream& out) {
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    out << "[ringmaster] cannot create a pipe: " << std::strerror(errno) << std::endl;
    return 1;
  }
  g_interrupted = 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGCHLD, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int rc = 1;
  try {
    rc = Runner(job, options, out).Run();
  } catch (const std::exception& e) {
    out << "[ringmaster] error: " << e.what() << std::endl;
  }
  signal(SIGCHLD, SIG_DFL);
  close(g_signal_pipe[0]);
  close(g_signal_pipe[1]);
  return rc;
}

}  // namespace ringmaster::cli
