// The options of tf.distribute.experimental.CommunicationOptions, with TF's
// validation and merge rules, and their encoding in RINGMASTER_* variables
// (how the operator hands a job's defaults to the agent in every pod).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/enums.h"
#include "ringmaster/env_vars.h"
#include "ringmaster/status.h"

namespace ringmaster {

// Values and names: RM_IMPLEMENTATION_TABLE (enums.h).
enum class Implementation : int { RM_IMPLEMENTATION_TABLE(RM_ENUM_CXX_ENUMERATOR) };

// "AUTO", "RING", "NCCL".
std::string_view ImplementationName(Implementation impl);
// Case-insensitive, as TF upper-cases strings. `field` names the source in
// the error ("spec.communication.implementation", "RINGMASTER_IMPLEMENTATION").
StatusOr<Implementation> ParseImplementation(std::string_view text, std::string_view field);

// The CPU engine's all-reduce algorithm: the engine's own tuning knob beside
// TF's implementation hint (as NCCL_ALGO is NCCL's). kAuto lets the engine
// pick by message size and group; the others force one for every size. NCCL
// chooses its own algorithm and ignores this one.
// Values and names: RM_ALGORITHM_TABLE (enums.h).
enum class Algorithm : int { RM_ALGORITHM_TABLE(RM_ENUM_CXX_ENUMERATOR) };

// "auto", "ring", "recursive_doubling", "halving_doubling".
std::string_view AlgorithmName(Algorithm algorithm);
// Case-insensitive, also "rd" and "hd". `field` names the source in the
// error ("RINGMASTER_ALGORITHM"), which also lists the valid values.
StatusOr<Algorithm> ParseAlgorithm(std::string_view text, std::string_view field);

// The variables (kEnvImplementation, kEnvBytesPerPack, kEnvTimeoutSeconds,
// kEnvAlgorithm, kEnvAgentPort) are in env_vars.h's table.
// The agent's port beside a TensorFlow server on `tf_port`: the next one
// (the one below for 65535). The operator gives every pod this port; an
// agent without RINGMASTER_PORT derives its leader's port the same way.
constexpr int DefaultAgentPort(int tf_port) {
  return tf_port < 65535 ? tf_port + 1 : tf_port - 1;
}

struct CommunicationOptions {
  // 0: the agent chooses the pack size. Tensors are packed in order; a new
  // pack starts once the current one is larger than this.
  int64_t bytes_per_pack = 0;
  // nullopt: not set (TF's None), so a merge keeps the job default.
  // A set value <= 0 means no deadline.
  std::optional<double> timeout_seconds;
  // A hint: AUTO picks NCCL for GPU memory, the CPU engine otherwise.
  Implementation implementation = Implementation::kAuto;
  // Not one of TF's options: the CPU engine's algorithm (see Algorithm).
  Algorithm algorithm = Algorithm::kAuto;

  // InvalidArgument naming the field for a negative pack size or timeout, or
  // an enum value out of range.
  Status Validate() const;
  // TF's Options.merge: every per-call value that is not the default
  // (bytes_per_pack != 0, timeout set, implementation != AUTO,
  // algorithm != auto) wins.
  CommunicationOptions Merge(const CommunicationOptions& per_call) const;
  // The deadline in seconds, or nullopt when collectives may take any time.
  std::optional<double> EffectiveTimeout() const;

  // Variables the operator injects: always the three names, with "0" for an
  // unset timeout (absent or 0 both mean no timeout); RINGMASTER_ALGORITHM
  // only when the algorithm is not auto.
  std::map<std::string, std::string> ToEnv() const;
  // Reads the four variables (each optional) through `getenv`; malformed
  // values fail with InvalidArgument naming the variable.
  static StatusOr<CommunicationOptions> FromEnv(const std::function<const char*(const char*)>& getenv_fn);

  friend bool operator==(const CommunicationOptions&, const CommunicationOptions&) = default;
};

}  // namespace ringmaster
