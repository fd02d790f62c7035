// Who may take part: every member proves it holds the job's key (a secret
// the operator puts in a Secret, `ringmaster run` makes per run) by
// HMAC-SHA256 over fresh nonces from both sides, bound to what it claims
// (task, rank, incarnation, channel). Nothing is encrypted: the key keeps
// strangers out of the group, it does not hide the gradients
// (docs/design.md says why). Pure code but for the nonces' randomness.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "ringmaster/status.h"

namespace ringmaster::internal {

inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kMinKeyBytes = 16;
inline constexpr size_t kMaxKeyBytes = 4096;
using Nonce = std::array<char, kNonceBytes>;
using Mac = std::array<char, kMacBytes>;

inline std::string_view View(const Nonce& n) {
  return {n.data(), n.size()};
}
inline std::string_view View(const Mac& m) {
  return {m.data(), m.size()};
}
// A field of a signed message: fixed-width little-endian.
std::string U64(uint64_t v);

// Constant-time: whether `got` is exactly `want`.
bool MacEquals(const Mac& want, std::string_view got);

// A fresh random nonce (the OS's CSPRNG).
Nonce FreshNonce();

// The job's key; empty when this member was given none.
class JobKey {
 public:
  JobKey() = default;
  explicit JobKey(std::string bytes) : key_(std::move(bytes)) {}
  bool empty() const { return key_.empty(); }
  // HMAC-SHA256 over `purpose` and `fields`, each length-prefixed, so no
  // two different messages sign alike.
  Mac Sign(std::string_view purpose, std::initializer_list<std::string_view> fields) const;
  // Constant-time comparison with what Sign gives.
  bool Verify(std::string_view mac, std::string_view purpose,
              std::initializer_list<std::string_view> fields) const;

 private:
  std::string key_;
};

// The key in RINGMASTER_JOB_KEY_FILE: its bytes as they are (a Secret item
// or a file of random bytes), 16 to 4096 of them; errors name the variable
// and the path.
StatusOr<std::string> ReadJobKeyFile(const std::string& path);

// The challenges the leader has handed out: each redeemable once, for `ttl`;
// at most `capacity` outstanding (the oldest is dropped), so a flood of
// Challenge calls costs bounded memory.
class NonceBook {
 public:
  explicit NonceBook(size_t capacity = 4096, std::chrono::seconds ttl = std::chrono::seconds(60))
      : capacity_(capacity), ttl_(ttl) {}
  Nonce Issue(std::chrono::steady_clock::time_point now);
  bool Redeem(std::string_view nonce, std::chrono::steady_clock::time_point now);
  size_t size() const;

 private:
  struct Entry {
    Nonce nonce;
    std::chrono::steady_clock::time_point issued;
  };
  mutable std::mutex mu_;
  size_t capacity_;
  std::chrono::seconds ttl_;
  std::deque<Entry> live_;
};

// Peers refused for want of the key: counted, and logged once per address
// (up to 1024 addresses remembered; past that, counted only).
class RefusalLog {
 public:
  explicit RefusalLog(std::string self) : self_(std::move(self)) {}
  void Refuse(const std::string& address, const std::string& why);
  uint64_t count() const;

 private:
  std::string self_;
  mutable std::mutex mu_;
  uint64_t count_ = 0;
  std::set<std::string> logged_;
};

}  // namespace ringmaster::internal
