#include "group/terminate.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "ringmaster/env_vars.h"

namespace ringmaster::internal {

namespace {

int g_fd = -1;

void OnSigterm(int) {
  const int saved = errno;
  uint64_t one = 1;
  if (g_fd >= 0) (void)!::write(g_fd, &one, sizeof one);  // async-signal-safe
  errno = saved;
}

}  // namespace

void InstallTerminationHook() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* opt = std::getenv(kEnvSigtermHook);
    if (opt && std::strcmp(opt, "0") == 0) return;
    struct sigaction old {};
    if (::sigaction(SIGTERM, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;  // theirs stays
    g_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g_fd < 0) return;
    struct sigaction sa {};
    sa.sa_handler = OnSigterm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGTERM, &sa, nullptr);
  });
}

int TerminationFd() {
  return g_fd;
}

void DieOfSigterm() {
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
  ::_exit(128 + SIGTERM);  // not reached: SIGTERM's default is to terminate
}

}  // namespace ringmaster::internal
