// run_directory.h: the directory of one `ringmaster run`.
#include "run_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ringmaster::cli {

RunDirectory::RunDirectory() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ringmaster-run.XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    throw std::runtime_error("cannot create a directory for the termination logs in " + tmpl + ": " +
                             std::strerror(errno));
  }
  dir_ = tmpl;
}

RunDirectory::~RunDirectory() {
  for (const std::string& f : files_) unlink(f.c_str());
  rmdir(dir_.c_str());
}

std::string RunDirectory::LogPath(const std::string& replica) {
  return *files_.insert(dir_ + "/" + replica + ".termination-log").first;
}

std::string RunDirectory::WriteKey(std::string& key) {
  const std::string path = *files_.insert(dir_ + "/job-key").first;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    explicit_bzero(key.data(), key.size());
    throw std::runtime_error("cannot create " + path + ": " + std::strerror(err));
  }
  // The mode is exactly 0600 whatever the umask.
  bool ok = fchmod(fd, 0600) == 0;
  for (size_t off = 0; ok && off < key.size();) {
    const ssize_t n = write(fd, key.data() + off, key.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  const int err = errno;
  ok = close(fd) == 0 && ok;
  explicit_bzero(key.data(), key.size());
  if (!ok) throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
  return path;
}

}  // namespace ringmaster::cli
