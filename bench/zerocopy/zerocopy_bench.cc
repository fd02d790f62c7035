// MSG_ZEROCOPY against plain send() for the engine's large chunks (256 KiB,
// the ring's pipeline unit): one TCP connection over 127.0.0.1, a receiver
// thread reading into its own buffer, the two modes alternated in one run.
// For each: GB/s, the sender's CPU seconds per GB, and how many completions
// the kernel flagged SO_EE_CODE_ZEROCOPY_COPIED (it copied after all).
//   rm-bench-zerocopy [--mib TOTAL_MIB_PER_ROUND] [--rounds R]
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

namespace {

constexpr size_t kChunk = 256 * 1024;
constexpr int kBuffers = 16;  // chunks in flight before the sender waits for completions

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "rm-bench-zerocopy: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Connect(int* send_fd, int* recv_fd) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) Die("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || listen(l, 1) < 0) Die("bind/listen");
  socklen_t len = sizeof a;
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  *send_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(*send_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) Die("connect");
  *recv_fd = accept(l, nullptr, nullptr);
  if (*recv_fd < 0) Die("accept");
  close(l);
  int one = 1;
  setsockopt(*send_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct Result {
  double gbps, cpu_s_per_gb;
  long completions, copied;
};

// Reads the error queue's completion notifications; returns how many sends
// they cover and counts those the kernel copied anyway.
long ReapCompletions(int fd, long* copied) {
  long done = 0;
  for (;;) {
    char control[128];
    msghdr m{};
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return done;
      Die("recvmsg(MSG_ERRQUEUE)");
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      auto* e = reinterpret_cast<sock_extended_err*>(CMSG_DATA(c));
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      const long n = static_cast<long>(e->ee_data) - static_cast<long>(e->ee_info) + 1;
      done += n;
      if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) *copied += n;
    }
  }
}

Result Run(bool zerocopy, size_t total) {
  int s, r;
  Connect(&s, &r);
  if (zerocopy) {
    int one = 1;
    if (setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) < 0) Die("setsockopt(SO_ZEROCOPY)");
  }
  std::thread receiver([r, total] {
    std::vector<char> buf(kChunk);
    size_t got = 0;
    while (got < total) {
      ssize_t n = recv(r, buf.data(), buf.size(), 0);
      if (n <= 0) Die("recv");
      got += static_cast<size_t>(n);
    }
  });
  std::vector<std::vector<char>> bufs(kBuffers, std::vector<char>(kChunk, 'x'));
  long sent_calls = 0, completed = 0, copied = 0;
  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  size_t sent = 0;
  while (sent < total) {
    if (zerocopy) {  // buffer k may be reused only once its send completed
      while (sent_calls - completed >= kBuffers) {
        pollfd p{s, 0, 0};
        poll(&p, 1, 100);
        completed += ReapCompletions(s, &copied);
      }
    }
    const char* b = bufs[static_cast<size_t>(sent_calls % kBuffers)].data();
    size_t off = 0;
    const size_t len = std::min(kChunk, total - sent);
    // One send per chunk; a short send continues with plain sends (the
    // completion counter counts calls that sent with MSG_ZEROCOPY).
    bool first = true;
    while (off < len) {
      ssize_t w = send(s, b + off, len - off, first && zerocopy ? MSG_ZEROCOPY : 0);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == ENOBUFS) {  // optmem limit: reap and retry
          completed += ReapCompletions(s, &copied);
          continue;
        }
        Die("send");
      }
      if (first && zerocopy) ++sent_calls;
      first = false;
      off += static_cast<size_t>(w);
    }
    if (!zerocopy) ++sent_calls;
    sent += len;
  }
  receiver.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (zerocopy) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (completed < sent_calls && std::chrono::steady_clock::now() < until) {
      pollfd p{s, 0, 0};
      poll(&p, 1, 10);
      completed += ReapCompletions(s, &copied);
    }
  }
  const double cpu = ThreadCpuSeconds() - cpu0;
  close(s);
  close(r);
  const double gb = static_cast<double>(total) / 1e9;
  return {gb / secs, cpu / gb, zerocopy ? completed : 0, copied};
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 2048;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: rm-bench-zerocopy [--mib TOTAL_MIB_PER_ROUND] [--rounds R]\n");
      return 2;
    }
  }
  std::printf("TCP over 127.0.0.1, %zu MiB per round in %zu KiB sends, %d rounds, the modes alternated\n\n",
              mib, kChunk / 1024, rounds);
  std::printf(
      "| round | mode | GB/s | sender CPU s per GB | zerocopy completions | of them copied |\n"
      "|---|---|---|---|---|---|\n");
  for (int round = 1; round <= rounds; ++round) {
    for (bool zc : {false, true}) {
      Result res = Run(zc, mib << 20);
      std::printf("| %d | %s | %.2f | %.3f | %ld | %ld |\n", round, zc ? "MSG_ZEROCOPY" : "send", res.gbps,
                  res.cpu_s_per_gb, res.completions, res.copied);
    }
  }
  return 0;
}
