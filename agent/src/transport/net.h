// Small POSIX socket helpers with deadlines (nothing here blocks forever;
// the deadlines are clock.h's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "clock.h"
#include "ringmaster/status.h"

struct sockaddr_storage;

namespace ringmaster::internal {

// Splits "host:port" (IPv6 as "[::1]:2222").
Status SplitHostPort(const std::string& address, std::string* host, int* port);
// Listens on all addresses; port 0 picks one (returned in *bound_port).
StatusOr<int> Listen(int port, int* bound_port, int backlog = 256);
// Connects, retrying refused connections until the deadline (the peer may not
// be listening yet). `again`, when given, is asked after each failed attempt
// with its errno (0: the name did not resolve): a status other than OK ends
// the retries with that status (a caller that knows the peer has listened
// already can tell a refusal means it is gone).
using RetryCheck = std::function<Status(int err)>;
StatusOr<int> ConnectWithRetry(const std::string& host, int port, Deadline deadline,
                               const RetryCheck& again = {});
void SetNonBlocking(int fd);
void TuneDataSocket(int fd);  // TCP_NODELAY
// Whole-buffer I/O on a non-blocking socket, bounded by the deadline.
Status WriteAll(int fd, const void* data, size_t n, Deadline deadline);
Status ReadAll(int fd, void* data, size_t n, Deadline deadline);
void CloseFd(int& fd);
// The host part of a peer's address ("10.0.0.7", "::1"), for logs.
std::string AddressText(const sockaddr_storage& addr);

}  // namespace ringmaster::internal
