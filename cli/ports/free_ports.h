// Header-only: ports on 127.0.0.1 for local groups (`ringmaster run`,
// `ringmaster bench`, the tests, bench/gpu). Internal; not installed.
// Target ringmaster_free_ports (cli/CMakeLists.txt).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace ringmaster::internal {

// `count` distinct ports the kernel just handed out: all are bound at once
// (so no two are the same) and released together just before returning, for
// the caller's processes to take. Empty when a socket could not be bound
// (errno says why).
inline std::vector<int> FreeLocalPorts(int count) {
  std::vector<int> socks, ports;
  bool ok = true;
  for (int i = 0; i < count && ok; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
         ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    if (fd >= 0) socks.push_back(fd);
    if (ok) ports.push_back(ntohs(addr.sin_port));
  }
  const int saved = errno;
  for (int fd : socks) ::close(fd);
  errno = saved;
  if (!ok) ports.clear();
  return ports;
}

}  // namespace ringmaster::internal
