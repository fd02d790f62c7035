// NewJobKey: the kernel's random bytes.
#include "ringmaster/job_key.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace ringmaster {

StatusOr<std::string> NewJobKey() {
  std::string key(kJobKeyBytes, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return UnavailableError(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return key;
}

}  // namespace ringmaster
