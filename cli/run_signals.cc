// run_signals.h: the self-pipe of one `ringmaster run`.
#include "run_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::cli {
namespace {

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

}  // namespace

std::string InstallRunSignals() {
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return std::string("cannot create a pipe: ") + std::strerror(errno);
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
  return "";
}

void RemoveRunSignals() {
  signal(SIGCHLD, SIG_DFL);
  close(g_signal_pipe[0]);
  close(g_signal_pipe[1]);
  g_signal_pipe[0] = g_signal_pipe[1] = -1;
}

int RunSignalFd() {
  return g_signal_pipe[0];
}

void DrainRunSignals() {
  char sink[64];
  while (read(g_signal_pipe[0], sink, sizeof sink) > 0) {
  }
}

bool RunInterrupted() {
  return g_interrupted != 0;
}

}  // namespace ringmaster::cli
