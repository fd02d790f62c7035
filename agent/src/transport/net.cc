#include "transport/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "transport/fd_budget.h"

namespace ringmaster::internal {

Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 >= address.size()) {
    return InvalidArgumentError("address '" + address + "' is not host:port");
  }
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int p = 0;
  const char* b = address.data() + colon + 1;
  const char* e = address.data() + address.size();
  auto [end, ec] = std::from_chars(b, e, p);
  if (ec != std::errc() || end != e || p <= 0 || p > 65535) {
    return InvalidArgumentError("address '" + address + "' has no valid port");
  }
  *host = h;
  *port = p;
  return OkStatus();
}

StatusOr<int> Listen(int port, int* bound_port, int backlog) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(std::string("socket: ") + std::strerror(errno));
  int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(fd, backlog) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return UnavailableError("cannot listen on port " + std::to_string(port) + ": " + err);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  SetNonBlocking(fd);
  return fd;
}

StatusOr<int> ConnectWithRetry(const std::string& host, int port, Deadline deadline,
                               const RetryCheck& again) {
  std::string last = "no attempt";
  int delay_ms = 10;
  while (true) {
    int last_errno = 0;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (g != 0) {
      last = std::string("cannot resolve: ") + gai_strerror(g);
    } else {
      for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
          // Not a network failure: retrying until the deadline would only hide it.
          ::freeaddrinfo(res);
          return FailedPreconditionError("cannot connect to " + host + ":" + std::to_string(port) +
                                         ": out of file descriptors: " + DescribeFdLimit());
        }
        if (fd < 0) continue;
        int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          int pr = ::poll(&p, 1, PollTimeoutMs(deadline, 2000));
          int err = 0;
          socklen_t l = sizeof err;
          if (pr == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
          rc = (pr == 1 && err == 0) ? 0 : -1;
          errno = pr == 1 ? err : ETIMEDOUT;
        }
        if (rc == 0) {
          ::freeaddrinfo(res);
          return fd;
        }
        last_errno = errno;
        last = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    if (again) {
      if (Status st = again(last_errno); !st.ok()) return st;
    }
    if (Clock::now() + std::chrono::milliseconds(delay_ms) >= deadline) {
      return UnavailableError("cannot connect to " + host + ":" + std::to_string(port) + ": " + last);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 500);
  }
}

void SetNonBlocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void TuneDataSocket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Status WriteAll(int fd, const void* data, size_t n, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      int t = PollTimeoutMs(deadline);
      if (t == 0 || ::poll(&pf, 1, t) == 0) return DeadlineExceededError("write timed out");
      continue;
    }
    return UnavailableError(std::string("write: ") + std::strerror(errno));
  }
  return OkStatus();
}

Status ReadAll(int fd, void* data, size_t n, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return UnavailableError("connection closed");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pf{fd, POLLIN, 0};
      int t = PollTimeoutMs(deadline);
      if (t == 0 || ::poll(&pf, 1, t) == 0) return DeadlineExceededError("read timed out");
      continue;
    }
    return UnavailableError(std::string("read: ") + std::strerror(errno));
  }
  return OkStatus();
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string AddressText(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, buf, sizeof buf);
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace ringmaster::internal
