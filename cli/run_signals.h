// The signals of one `ringmaster run`: Ctrl-C and SIGTERM interrupt it, and
// SIGCHLD wakes it; each handler writes a byte to a pipe that the run's
// poll loop watches (the self-pipe), so no wait misses a signal.
#pragma once

#include <string>

namespace ringmaster::cli {

// Installs the handlers (SIGINT, SIGTERM, SIGCHLD; SIGPIPE ignored) and
// clears Interrupted(). Returns "" or why the pipe could not be made.
std::string InstallRunSignals();
// SIGCHLD back to its default, the pipe closed.
void RemoveRunSignals();

// The pipe's read end, to poll for POLLIN.
int RunSignalFd();
// Reads what the handlers wrote, so that the next poll waits again.
void DrainRunSignals();
// A SIGINT or SIGTERM arrived since InstallRunSignals.
bool RunInterrupted();

}  // namespace ringmaster::cli
