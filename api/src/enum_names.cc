// The tables of enums.h as EnumTables: each enum's names, aliases and parsing.
#include "ringmaster/enum_names.h"

#include <string>

#include "ringmaster/ascii_case.h"
#include "ringmaster/join_list.h"

namespace ringmaster {
namespace {

#define RM_ENUM_ENTRY(c_name, cxx_name, value, name) EnumEntry{value, name},
#define RM_ENUM_ALIAS(name, c_value) EnumEntry{c_value, name},

// The C enumerators' values, for the aliases tables.
enum : int { RM_DTYPE_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_REDUCE_OP_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_IMPLEMENTATION_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_ALGORITHM_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_COLLECTIVE_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_REPLICA_TYPE_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_RESTART_POLICY_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_CLEAN_POD_POLICY_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_RECOVERY_POLICY_TABLE(RM_ENUM_C_ENUMERATOR) };
enum : int { RM_CONDITION_TYPE_TABLE(RM_ENUM_C_ENUMERATOR) };

// An alias table may be empty; a zero-length array is not C++.
constexpr EnumEntry kDTypes[] = {RM_DTYPE_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kDTypeAliases[] = {RM_DTYPE_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kReduceOps[] = {RM_REDUCE_OP_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kReduceOpAliases[] = {RM_REDUCE_OP_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kImplementations[] = {RM_IMPLEMENTATION_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kImplementationAliases[] = {RM_IMPLEMENTATION_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kAlgorithms[] = {RM_ALGORITHM_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kAlgorithmAliases[] = {RM_ALGORITHM_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kCollectives[] = {RM_COLLECTIVE_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kCollectiveAliases[] = {RM_COLLECTIVE_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kReplicaTypes[] = {RM_REPLICA_TYPE_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kReplicaTypeAliases[] = {RM_REPLICA_TYPE_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kRestartPolicies[] = {RM_RESTART_POLICY_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kRestartPolicyAliases[] = {RM_RESTART_POLICY_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kCleanPodPolicies[] = {RM_CLEAN_POD_POLICY_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kCleanPodPolicyAliases[] = {RM_CLEAN_POD_POLICY_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kRecoveryPolicies[] = {RM_RECOVERY_POLICY_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kRecoveryPolicyAliases[] = {RM_RECOVERY_POLICY_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
constexpr EnumEntry kConditionTypes[] = {RM_CONDITION_TYPE_TABLE(RM_ENUM_ENTRY)};
constexpr EnumEntry kConditionTypeAliases[] = {RM_CONDITION_TYPE_ALIASES(RM_ENUM_ALIAS) EnumEntry{-1, ""}};
#define RM_HOROVOD_ENTRY(name, value, engine) EnumEntry{value, name},
constexpr EnumEntry kHorovodReduceOps[] = {RM_HOROVOD_REDUCE_OP_TABLE(RM_HOROVOD_ENTRY)};
#define RM_HOROVOD_ENGINE(name, value, engine) std::string_view(engine),
constexpr std::string_view kHorovodEngineOps[] = {RM_HOROVOD_REDUCE_OP_TABLE(RM_HOROVOD_ENGINE)};

// The tables must be numbered 0..n-1 in order (EnumTable::NameOf indexes).
constexpr bool Dense(std::span<const EnumEntry> t) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].value != static_cast<int>(i)) return false;
  }
  return true;
}
static_assert(Dense(kDTypes) && Dense(kReduceOps) && Dense(kImplementations) && Dense(kAlgorithms) &&
                  Dense(kCollectives) && Dense(kHorovodReduceOps) && Dense(kReplicaTypes) &&
                  Dense(kRestartPolicies) && Dense(kCleanPodPolicies) && Dense(kRecoveryPolicies) &&
                  Dense(kConditionTypes),
              "enums.h: a table's values must be 0, 1, 2, ... in order");

template <size_t N>
constexpr std::span<const EnumEntry> Aliases(const EnumEntry (&a)[N]) {
  return {a, N - 1};  // without the terminator
}

std::string Names(const EnumTable& t) {
  return JoinList(t.values, [](const EnumEntry& e) { return e.name; });
}

}  // namespace

StatusOr<int> EnumTable::Parse(std::string_view text, std::string_view field) const {
  for (const auto& e : values) {
    if (EqualFold(text, e.name)) return e.value;
  }
  for (const auto& e : aliases) {
    if (EqualFold(text, e.name)) return e.value;
  }
  return InvalidArgumentError(std::string(field) + ": unknown " + std::string(what) + " '" +
                              std::string(text) + "', expected one of " + Names(*this));
}

Status EnumTable::CheckValue(int value, std::string_view field) const {
  if (Contains(value)) return OkStatus();
  return InvalidArgumentError(std::string(field) + ": not a valid " + std::string(what) + ": " +
                              std::to_string(value) + " (expected 0.." + std::to_string(values.size() - 1) +
                              ": " + Names(*this) + ")");
}

const EnumTable& DTypeTable() {
  static const EnumTable t{"dtype", kDTypes, Aliases(kDTypeAliases)};
  return t;
}
const EnumTable& ReduceOpTable() {
  static const EnumTable t{"reduce op", kReduceOps, Aliases(kReduceOpAliases)};
  return t;
}
const EnumTable& ImplementationTable() {
  static const EnumTable t{"implementation", kImplementations, Aliases(kImplementationAliases)};
  return t;
}
const EnumTable& AlgorithmTable() {
  static const EnumTable t{"algorithm", kAlgorithms, Aliases(kAlgorithmAliases)};
  return t;
}

const EnumTable& CollectiveTable() {
  static const EnumTable t{"collective", kCollectives, Aliases(kCollectiveAliases)};
  return t;
}
const EnumTable& HorovodReduceOpTable() {
  static const EnumTable t{"Horovod reduce op", kHorovodReduceOps, {}};
  return t;
}

const EnumTable& ReplicaTypeTable() {
  static const EnumTable t{"replica type", kReplicaTypes, Aliases(kReplicaTypeAliases)};
  return t;
}
const EnumTable& RestartPolicyTable() {
  static const EnumTable t{"restart policy", kRestartPolicies, Aliases(kRestartPolicyAliases)};
  return t;
}
const EnumTable& CleanPodPolicyTable() {
  static const EnumTable t{"clean pod policy", kCleanPodPolicies, Aliases(kCleanPodPolicyAliases)};
  return t;
}
const EnumTable& RecoveryPolicyTable() {
  static const EnumTable t{"recovery policy", kRecoveryPolicies, Aliases(kRecoveryPolicyAliases)};
  return t;
}
const EnumTable& ConditionTypeTable() {
  static const EnumTable t{"condition type", kConditionTypes, Aliases(kConditionTypeAliases)};
  return t;
}

int HorovodToEngineReduceOp(int horovod) {
  if (!HorovodReduceOpTable().Contains(horovod)) return -1;
  const std::string_view engine = kHorovodEngineOps[horovod];
  if (engine.empty()) return -1;
  auto op = ReduceOpTable().Parse(engine, "enums.h");
  return op.ok() ? *op : -1;
}

}  // namespace ringmaster
