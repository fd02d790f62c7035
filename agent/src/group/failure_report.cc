// Writing a failure's report (failure_report.h): the stderr line and dump,
// the flight recorder's file, the termination message.
#include "group/failure_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent_log.h"
#include "group/flight_recorder_ring.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

void WriteFailureReport(const FailureReport& rep, const std::string& task, int rank, int size,
                        const Status& cause, const std::vector<FlightEntry>& entries) {
  const std::string line = std::string(StatusCodeName(cause.code())) + ": " + cause.message();
  if (rep.print) {
    WriteStderr("ringmaster: " + task + ": " + line + "\n" +
                FlightDumpJson(task, rank, size, cause, entries, rep.stderr_entries) + "\n");
  }
  if (!rep.flight_dir.empty()) {
    std::string file = task;
    for (char& c : file)
      if (c == '/' || c == ':') c = '-';
    while (!file.empty() && file[0] == '-') file.erase(0, 1);
    file = rep.flight_dir + "/" + file + ".json";
    std::string json = FlightDumpJson(task, rank, size, cause, entries, entries.size()) + "\n";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)!::write(fd, json.data(), json.size());
      ::close(fd);
    } else if (rep.print) {
      WriteStderr("ringmaster: " + task + ": cannot write the flight recorder to " + file + ": " +
                  std::strerror(errno) + "\n");
    }
  }
  // The container's termination message (Kubernetes reads at most 4096 bytes).
  std::string path = rep.termination_log;
  bool create = !path.empty();
  if (path.empty() && ::access("/dev/termination-log", W_OK) == 0) path = "/dev/termination-log";
  if (!path.empty()) {
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd >= 0) {
      std::string text = line.substr(0, 4000) + "\n";
      (void)!::write(fd, text.data(), text.size());
      ::close(fd);
    }
  }
}

}  // namespace ringmaster::internal
