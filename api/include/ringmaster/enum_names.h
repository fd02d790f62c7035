// The names of the API's enums, read from their one table (enums.h): what
// every parser and printer of a dtype, reduce op, implementation,
// algorithm, collective or Horovod reduce op uses, in C++ and behind the C
// API's rm_*_name / rm_parse_*, and of the job model's replica types,
// policies and condition types (ringmaster/job.h, ringmaster/job_state.h).
#pragma once

#include <span>
#include <string_view>

#include "ringmaster/enums.h"
#include "ringmaster/status.h"

namespace ringmaster {

struct EnumEntry {
  int value;
  std::string_view name;
};

// One enum: what it is called in messages ("implementation"), its values
// (in order, numbered 0..n-1) and the other spellings parsers accept.
struct EnumTable {
  std::string_view what;
  std::span<const EnumEntry> values;
  std::span<const EnumEntry> aliases;

  bool Contains(int value) const { return value >= 0 && static_cast<size_t>(value) < values.size(); }
  // The value's name; "" when it is out of range.
  std::string_view NameOf(int value) const {
    return Contains(value) ? values[value].name : std::string_view();
  }
  // Case-insensitive, names then aliases. InvalidArgument "FIELD: unknown
  // WHAT 'TEXT', expected one of NAME, NAME, ..." otherwise.
  StatusOr<int> Parse(std::string_view text, std::string_view field) const;
  // "FIELD: not a valid WHAT: VALUE (expected 0..n-1: NAME, ...)", for a
  // number that came in through the C API or a binding.
  Status CheckValue(int value, std::string_view field) const;
};

const EnumTable& DTypeTable();
const EnumTable& ReduceOpTable();
const EnumTable& ImplementationTable();
const EnumTable& AlgorithmTable();
const EnumTable& CollectiveTable();
// Horovod's reduce ops, by Horovod's numbers (Average 0 ... Product 5).
const EnumTable& HorovodReduceOpTable();
// The engine's reduce op (rm_reduce_op) for Horovod's `horovod`; -1 for one
// the engine has not (Adasum) or a number that is none of Horovod's.
int HorovodToEngineReduceOp(int horovod);

// The job model's: spec.replicaSpecs keys ("Master" an alias of Chief),
// restartPolicy, runPolicy.cleanPodPolicy, runPolicy.recovery, and the
// types of status.conditions.
const EnumTable& ReplicaTypeTable();
const EnumTable& RestartPolicyTable();
const EnumTable& CleanPodPolicyTable();
const EnumTable& RecoveryPolicyTable();
const EnumTable& ConditionTypeTable();

}  // namespace ringmaster
