// Every environment variable the agent reads, in one table (as NCCL's
// NCCL_PARAM): its constant, its name and what it means. The constants
// (kEnvTfConfig, ...) are made from the table, so a variable cannot be read
// without being in it; docs/agent.md's "Environment" table is rendered from
// it (RenderEnvironmentTable; scripts/gen-env-doc writes it, and a test fails
// when the page differs). Pure: the readers are ParseReplicaEnv
// (replica_env.h), CommunicationOptions::FromEnv and the agent's few
// process-wide switches.
#pragma once

#include <string>
#include <string_view>

namespace ringmaster {

// X(constant suffix, variable, meaning in Markdown).
#define RINGMASTER_AGENT_ENV_TABLE(X)                                                                        \
  X(TfConfig, "TF_CONFIG",                                                                                   \
    "the group: chief (or master) then workers are ranks 0..n-1; PS and evaluator are not members")          \
  X(Implementation, "RINGMASTER_IMPLEMENTATION",                                                             \
    "the job's implementation hint (`AUTO`, `RING`, `NCCL`); per-call options merge over it, as TF's "       \
    "`Options.merge` does")                                                                                  \
  X(BytesPerPack, "RINGMASTER_BYTES_PER_PACK",                                                               \
    "the job's `bytes_per_pack` (0: the agent's own packing); per-call options merge over it")               \
  X(TimeoutSeconds, "RINGMASTER_TIMEOUT_SECONDS",                                                            \
    "the job's collective timeout in seconds (a late collective fails with DeadlineExceeded); per-call "     \
    "options merge over it")                                                                                 \
  X(Algorithm, "RINGMASTER_ALGORITHM",                                                                       \
    "the CPU engine's all-reduce algorithm, its own knob beside TF's implementation hint (as `NCCL_ALGO` "   \
    "is NCCL's): `auto` (default), `ring`, `recursive_doubling`, `halving_doubling`, case-insensitive. Not " \
    "a job-spec field (set it in the pod template's `env`); per call it is "                                 \
    "`CommunicationOptions::algorithm`, merged like `implementation` (a per-call value other than auto "     \
    "wins). NCCL ignores it")                                                                                \
  X(AgentPort, "RINGMASTER_PORT",                                                                            \
    "the agent's own gRPC control port, never the TF_CONFIG port (TensorFlow's server takes that one): one " \
    "port for every member (`2223`: Kubernetes, one pod per member; the operator sets `spec.port + 1`), or " \
    "one per member in rank order (`41000,41001,41002`: members sharing a host; `ringmaster run` sets it). " \
    "Unset: the leader serves on its TF_CONFIG port + 1, the others on a port the kernel picks. A taken "    \
    "port fails with \"address already in use\", naming the port and this variable")                         \
  X(FormationTimeoutSeconds, "RINGMASTER_FORMATION_TIMEOUT_SECONDS",                                         \
    "how long group formation waits (default 300)")                                                          \
  X(HeartbeatTimeoutSeconds, "RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS",                                         \
    "a member silent this long is declared dead (default 15)")                                               \
  X(MinSize, "RINGMASTER_MIN_SIZE",                                                                          \
    "elastic size (`spec.runPolicy.elastic`; the operator and `ringmaster run` set it): how many members "   \
    "the group needs at least, so that it may re-form without the members that have not come back")          \
  X(RejoinTimeoutSeconds, "RINGMASTER_REJOIN_TIMEOUT_SECONDS",                                               \
    "with `RINGMASTER_MIN_SIZE`: how long a re-formation waits for the failed members before it goes on "    \
    "without them")                                                                                          \
  X(Streams, "RINGMASTER_STREAMS", "packs in flight at once, each on its own connections (1..8, default 2)") \
  X(CudartLibrary, "RINGMASTER_CUDART_LIBRARY",                                                              \
    "what the GPU backend dlopens for the CUDA runtime at the first GPU call (default `libcudart.so.12`); "  \
    "see [gpu.md](gpu.md)")                                                                                  \
  X(NcclLibrary, "RINGMASTER_NCCL_LIBRARY",                                                                  \
    "what the GPU backend dlopens for NCCL at the first GPU call (default `libnccl.so.2`); see "             \
    "[gpu.md](gpu.md)")                                                                                      \
  X(JobKeyFile, "RINGMASTER_JOB_KEY_FILE",                                                                   \
    "the job's key (16-4096 raw bytes; the operator mounts a Secret's item, `ringmaster run` makes one per " \
    "run): every Join, GetStatus and connection proves it (docs/design.md, \"the job key\"). Unset: no "     \
    "authentication, which every member must then agree on")                                                 \
  X(FlightRecorderSize, "RINGMASTER_FLIGHT_RECORDER_SIZE",                                                   \
    "collectives the flight recorder keeps (1..1048576, default 1024; fixed memory, about 80 bytes each)")   \
  X(FlightRecorderDir, "RINGMASTER_FLIGHT_RECORDER_DIR",                                                     \
    "on a failure, also write the recorder's whole dump to `DIR/<task>.json` (e.g. "                         \
    "`job-worker-task-1.json`)")                                                                             \
  X(TerminationLog, "RINGMASTER_TERMINATION_LOG",                                                            \
    "where the failure's one-line verdict is written; unset, `/dev/termination-log` when it exists (a "      \
    "Kubernetes container; the operator reads it back). `ringmaster run` sets one per replica")              \
  X(RestartCount, "RINGMASTER_RESTART_COUNT",                                                                \
    "how many times this replica was restarted (the operator and `ringmaster run` set it; 0 or unset: the "  \
    "first start). `ringmaster-worker` resumes only after a restart")                                        \
  X(Recovery, "RINGMASTER_RECOVERY",                                                                         \
    "`InPlace` when the job's `spec.runPolicy.recovery` is (the operator sets it): the program may keep "    \
    "its process through another member's failure, and `ringmaster-worker` recovers in place")               \
  X(SigtermHook, "RINGMASTER_SIGTERM_HOOK",                                                                  \
    "`0` leaves SIGTERM alone; otherwise, when the process has no SIGTERM handler of its own, the agent "    \
    "aborts the group naming the terminated member before the process dies (see \"SIGTERM\" below)")         \
  X(LogLevel, "RINGMASTER_LOG_LEVEL",                                                                        \
    "`debug` prints the implementation chosen (CPU engine, NCCL, host staging) and NCCL formations")

#define RINGMASTER_ENV_CONSTANT(suffix, name, meaning) inline constexpr char kEnv##suffix[] = name;
RINGMASTER_AGENT_ENV_TABLE(RINGMASTER_ENV_CONSTANT)
#undef RINGMASTER_ENV_CONSTANT

struct EnvVar {
  std::string_view constant;  // "kEnvTfConfig"
  std::string_view name;      // "TF_CONFIG"
  std::string_view meaning;   // Markdown
};

#define RINGMASTER_ENV_ROW(suffix, name, meaning) EnvVar{"kEnv" #suffix, name, meaning},
inline constexpr EnvVar kAgentEnvironment[] = {RINGMASTER_AGENT_ENV_TABLE(RINGMASTER_ENV_ROW)};
#undef RINGMASTER_ENV_ROW

// The table's rows in order, as docs/agent.md's Markdown table: a header
// ("| variable | meaning |") and one row per variable, each line ending "\n".
std::string RenderEnvironmentTable();

}  // namespace ringmaster
