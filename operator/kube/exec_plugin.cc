#include "exec_plugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace ringmaster::op {

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void CloseEnd(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

bool MakePipe(Pipe& p) {
  return ::pipe2(p.fd, O_CLOEXEC) == 0;
}

}  // namespace

StatusOr<ExecCredential> RunExecPlugin(const ClusterConfig& cluster, std::chrono::seconds timeout) {
  const ExecConfig& exec = *cluster.exec;
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (the operator has threads).
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool overridden = name == "KUBERNETES_EXEC_INFO";
    for (const auto& [n, v] : exec.env) overridden = overridden || n == name;
    if (!overridden) env_strings.push_back(kv);
  }
  for (const auto& [n, v] : exec.env) env_strings.push_back(n + "=" + v);
  env_strings.push_back("KUBERNETES_EXEC_INFO=" +
                        ExecInfoJson(exec, cluster.server, cluster.ca_pem, cluster.insecure_skip_tls_verify));
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {exec.command};
  args.insert(args.end(), exec.args.begin(), exec.args.end());
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  Pipe out, err, status;  // status: the child's errno if exec fails (closed by a successful exec)
  if (!MakePipe(out) || !MakePipe(err) || !MakePipe(status))
    return UnavailableError("cannot run the exec plugin '" + exec.command +
                            "': pipe: " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0)
    return UnavailableError("cannot run the exec plugin '" + exec.command +
                            "': fork: " + std::strerror(errno));
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out.fd[1], 1);
    ::dup2(err.fd[1], 2);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!::write(status.fd[1], &e, sizeof e);
    ::_exit(127);
  }
  out.CloseEnd(1);
  err.CloseEnd(1);
  status.CloseEnd(1);

  std::string stdout_text, stderr_text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (bool out_open = true, err_open = true; out_open || err_open;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out.fd[0] : -1, POLLIN, 0}, {err_open ? err.fd[0] : -1, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? stdout_text : stderr_text).append(buf, static_cast<size_t>(n));
        if (stdout_text.size() + stderr_text.size() > (1 << 20)) timed_out = true;  // not a credential
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (timed_out) break;
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(status.fd[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  if (exec_failed) {
    if (exec_errno == ENOENT) return NotFoundError(ExecFailureMessage(exec, 127, "", /*not_found=*/true));
    return FailedPreconditionError(ExecFailureMessage(exec, 127, std::strerror(exec_errno), false));
  }
  if (timed_out)
    return DeadlineExceededError("exec plugin '" + exec.command + "' of kubeconfig user '" + exec.user +
                                 "' did not finish within " + std::to_string(timeout.count()) + "s; killed");
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  if (code != 0) return UnauthenticatedError(ExecFailureMessage(exec, code, stderr_text, false));
  return ParseExecCredential(exec, stdout_text);
}

}  // namespace ringmaster::op
