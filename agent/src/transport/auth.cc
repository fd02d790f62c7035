#include "transport/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent_log.h"

namespace ringmaster::internal {

std::string U64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

Nonce FreshNonce() {
  Nonce n{};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1) {
    // No randomness is no security: never hand out a predictable nonce.
    WriteStderr("ringmaster: fatal: the OS gave no random bytes for a nonce\n");
    std::abort();
  }
  return n;
}

Mac JobKey::Sign(std::string_view purpose, std::initializer_list<std::string_view> fields) const {
  std::string msg = "ringmaster-v1/";
  msg += purpose;
  for (std::string_view f : fields) {
    msg += U64(f.size());
    msg += f;
  }
  Mac mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
       reinterpret_cast<unsigned char*>(mac.data()), &len);
  return mac;
}

bool MacEquals(const Mac& want, std::string_view got) {
  return got.size() == kMacBytes && CRYPTO_memcmp(want.data(), got.data(), kMacBytes) == 0;
}

bool JobKey::Verify(std::string_view mac, std::string_view purpose,
                    std::initializer_list<std::string_view> fields) const {
  return MacEquals(Sign(purpose, fields), mac);
}

StatusOr<std::string> ReadJobKeyFile(const std::string& path) {
  const std::string where = "RINGMASTER_JOB_KEY_FILE (" + path + ")";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgumentError(where + ": cannot open the job key: " + std::strerror(errno));
  std::string key;
  char buf[1024];
  while (key.size() <= kMaxKeyBytes) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    key.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  if (key.size() < kMinKeyBytes || key.size() > kMaxKeyBytes) {
    return InvalidArgumentError(where + ": the job key must be " + std::to_string(kMinKeyBytes) + " to " +
                                std::to_string(kMaxKeyBytes) + " bytes, got " +
                                (key.size() > kMaxKeyBytes ? "more" : std::to_string(key.size())));
  }
  return key;
}

Nonce NonceBook::Issue(std::chrono::steady_clock::time_point now) {
  Nonce n = FreshNonce();
  std::lock_guard<std::mutex> lock(mu_);
  while (!live_.empty() && (live_.size() >= capacity_ || now - live_.front().issued > ttl_))
    live_.pop_front();
  live_.push_back({n, now});
  return n;
}

bool NonceBook::Redeem(std::string_view nonce, std::chrono::steady_clock::time_point now) {
  if (nonce.size() != kNonceBytes) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = live_.begin(); it != live_.end(); ++it) {
    if (CRYPTO_memcmp(it->nonce.data(), nonce.data(), kNonceBytes) != 0) continue;
    const bool fresh = now - it->issued <= ttl_;
    live_.erase(it);  // single use, fresh or not
    return fresh;
  }
  return false;
}

size_t NonceBook::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

void RefusalLog::Refuse(const std::string& address, const std::string& why) {
  bool log = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (logged_.size() < 1024 && logged_.insert(address).second) log = true;
  }
  if (log) WriteStderr("ringmaster: " + self_ + ": refused " + address + ": " + why + "\n");
}

uint64_t RefusalLog::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

}  // namespace ringmaster::internal
