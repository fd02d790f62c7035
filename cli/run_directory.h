// The directory of one `ringmaster run`: the replicas' termination logs and
// the run's job key, in a fresh directory under $TMPDIR (or /tmp), removed
// with everything the run put there when the run ends.
#pragma once

#include <set>
#include <string>

namespace ringmaster::cli {

class RunDirectory {
 public:
  // Creates it (mkdtemp); throws std::runtime_error naming where.
  RunDirectory();
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  // Where the replica named `replica` ("worker-1") writes its verdict
  // (RINGMASTER_TERMINATION_LOG); removed with the directory.
  std::string LogPath(const std::string& replica);

  // Writes `key` to the directory's "job-key", of mode exactly 0600
  // (whatever the umask; never an existing file), wipes `key` from memory
  // (also on failure) and returns the path (RINGMASTER_JOB_KEY_FILE).
  // Throws std::runtime_error naming the path.
  std::string WriteKey(std::string& key);

 private:
  std::string dir_;
  std::set<std::string> files_;  // what the run named here, removed at the end
};

}  // namespace ringmaster::cli
