// Header-only: ports on 127.0.0.1 for local groups (`ringmaster run`,
// `ringmaster bench`, the tests, bench/gpu). Internal; not installed.
// Target ringmaster_free_ports (common/CMakeLists.txt).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace ringmaster::internal {

// `count` distinct free ports, all bound at once (so no two are the same)
// and released together just before returning, for the caller's processes
// to take. They come from just below the kernel's ephemeral range
// (ip_local_port_range), at a random place: a port from inside that range
// could be handed to some other process's outgoing connection between our
// release and the caller's bind (seen as "address already in use" when tests
// run in parallel); below it, only another explicit bind can take it. Falls
// back to ports the kernel picks when that range is unusable. Empty when a
// socket could not be bound (errno says why).
inline std::vector<int> FreeLocalPorts(int count) {
  // An explicit port is probed on the wildcard address, dual-stack where
  // IPv6 exists: the agent's gRPC service binds [::]:port, which any
  // listener on that port conflicts with, on whatever address (a probe of
  // 127.0.0.1 alone let such ports through). Port 0 stays on loopback.
  auto wildcard_fd = [](int port, int* fd_out) {
    int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -2;  // no IPv6 here: the IPv4 wildcard below
    int off = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    *fd_out = fd;
    return port;
  };
  auto bind_port = [&](int port, int* fd_out) {  // port 0: the kernel picks
    if (port > 0) {
      const int got = wildcard_fd(port, fd_out);
      if (got != -2) return got;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(port > 0 ? INADDR_ANY : INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    *fd_out = fd;
    return static_cast<int>(ntohs(addr.sin_port));
  };
  std::vector<int> socks, ports;
  int ephemeral_low = 32768;
  if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &ephemeral_low) != 1) ephemeral_low = 32768;
    std::fclose(f);
  }
  const int base = std::max(1024, ephemeral_low - 12000), span = ephemeral_low - base;
  if (span >= 1000) {
    const int start = static_cast<int>(std::random_device{}() % static_cast<unsigned>(span));
    for (int i = 0; i < span && static_cast<int>(ports.size()) < count; ++i) {
      int fd = -1;
      const int port = bind_port(base + (start + i) % span, &fd);
      if (port < 0) continue;  // taken (or in TIME_WAIT): the next one
      socks.push_back(fd);
      ports.push_back(port);
    }
  }
  bool ok = true;
  while (ok && static_cast<int>(ports.size()) < count) {
    int fd = -1;
    const int port = bind_port(0, &fd);
    ok = port >= 0;
    if (ok) {
      socks.push_back(fd);
      ports.push_back(port);
    }
  }
  const int saved = errno;
  for (int fd : socks) ::close(fd);
  errno = saved;
  if (!ok) ports.clear();
  return ports;
}

}  // namespace ringmaster::internal
