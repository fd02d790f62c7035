// SIGTERM, the polite stop (a pod's deletion, `ringmaster run` stopping a
// replica after its grace period): when the process has no handler of its
// own, the agent's handler lets the monitor thread finish a diagnosis in
// progress and report the failure (stderr, flight recorder, termination
// log) before the process dies of the signal as it would have.
// RINGMASTER_SIGTERM_HOOK=0 leaves SIGTERM alone.
#pragma once

namespace ringmaster::internal {

// Installs the handler once per process, only over the default disposition.
void InstallTerminationHook();
// An eventfd that becomes readable (and stays so) once SIGTERM arrived; -1
// when the hook is not installed.
int TerminationFd();
// Dies of SIGTERM with the default disposition (after the report).
[[noreturn]] void DieOfSigterm();

}  // namespace ringmaster::internal
