// The one table of the API's enums (enums.h): every name parses back to its
// value in any case, aliases parse to theirs, the C++ enums carry the
// tables' numbers, and a bad name or number is refused naming the field and
// listing the valid names.
#include "ringmaster/enum_names.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "ringmaster/comm_options.h"
#include "ringmaster/job.h"
#include "ringmaster/job_state.h"

namespace ringmaster {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

TEST(EnumNames, EveryNameParsesBackInAnyCase) {
  for (const EnumTable* t : {&DTypeTable(), &ReduceOpTable(), &ImplementationTable(), &AlgorithmTable(),
                             &CollectiveTable(), &HorovodReduceOpTable()}) {
    ASSERT_FALSE(t->values.empty()) << t->what;
    for (size_t i = 0; i < t->values.size(); ++i) {
      const auto& e = t->values[i];
      EXPECT_EQ(e.value, static_cast<int>(i)) << t->what << " " << e.name;
      EXPECT_EQ(t->NameOf(e.value), e.name);
      EXPECT_EQ(*t->Parse(e.name, "f"), e.value) << e.name;
      EXPECT_EQ(*t->Parse(Upper(e.name), "f"), e.value) << e.name;
    }
    for (const auto& a : t->aliases) {
      EXPECT_TRUE(t->Contains(a.value)) << t->what << " alias " << a.name;
      EXPECT_EQ(*t->Parse(a.name, "f"), a.value) << a.name;
    }
    EXPECT_EQ(t->NameOf(-1), "");
    EXPECT_EQ(t->NameOf(static_cast<int>(t->values.size())), "");
  }
}

TEST(EnumNames, AliasesAreTheDocumentedOnes) {
  EXPECT_EQ(ReduceOpTable().NameOf(*ReduceOpTable().Parse("prod", "op")), "product");
  EXPECT_EQ(ReduceOpTable().NameOf(*ReduceOpTable().Parse("Average", "op")), "mean");
  EXPECT_EQ(*AlgorithmTable().Parse("rd", "a"), static_cast<int>(Algorithm::kRecursiveDoubling));
  EXPECT_EQ(*AlgorithmTable().Parse("hd", "a"), static_cast<int>(Algorithm::kHalvingDoubling));
}

TEST(EnumNames, TheCxxEnumsCarryTheTablesNumbers) {
  EXPECT_EQ(ImplementationName(Implementation::kNccl), "NCCL");
  EXPECT_EQ(static_cast<int>(Implementation::kNccl), 2);
  EXPECT_EQ(AlgorithmName(Algorithm::kHalvingDoubling), "halving_doubling");
  EXPECT_EQ(static_cast<int>(Algorithm::kHalvingDoubling), 3);
}

TEST(EnumNames, ABadNameOrNumberNamesTheFieldAndTheValidNames) {
  auto bad = ReduceOpTable().Parse("median", "op");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "op: unknown reduce op 'median', expected one of sum, mean, min, max, product");
  auto number = ImplementationTable().CheckValue(7, "options.implementation");
  EXPECT_EQ(number.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(number.message(),
            "options.implementation: not a valid implementation: 7 (expected 0..2: AUTO, RING, NCCL)");
  EXPECT_TRUE(ImplementationTable().CheckValue(2, "f").ok());
  EXPECT_FALSE(DTypeTable().Parse("", "dtype").ok());
  EXPECT_FALSE(DTypeTable().Parse("float", "dtype").ok());  // no aliases for dtypes: NumPy's names only
}

// Horovod's numbers are Horovod's (its users pass them as integers), and
// each maps to the engine's op of the same meaning; Adasum to none.
TEST(EnumNames, HorovodsReduceOpsKeepHorovodsNumbersAndMapToTheEnginesOps) {
  const auto& t = HorovodReduceOpTable();
  EXPECT_EQ(t.NameOf(0), "Average");
  EXPECT_EQ(t.NameOf(1), "Sum");
  EXPECT_EQ(t.NameOf(2), "Adasum");
  EXPECT_EQ(t.NameOf(3), "Min");
  EXPECT_EQ(t.NameOf(4), "Max");
  EXPECT_EQ(t.NameOf(5), "Product");
  EXPECT_EQ(ReduceOpTable().NameOf(HorovodToEngineReduceOp(0)), "mean");
  EXPECT_EQ(ReduceOpTable().NameOf(HorovodToEngineReduceOp(1)), "sum");
  EXPECT_EQ(HorovodToEngineReduceOp(2), -1);
  EXPECT_EQ(ReduceOpTable().NameOf(HorovodToEngineReduceOp(3)), "min");
  EXPECT_EQ(ReduceOpTable().NameOf(HorovodToEngineReduceOp(4)), "max");
  EXPECT_EQ(ReduceOpTable().NameOf(HorovodToEngineReduceOp(5)), "product");
  EXPECT_EQ(HorovodToEngineReduceOp(6), -1);
  EXPECT_EQ(HorovodToEngineReduceOp(-1), -1);
}

// The job model's enums come from the same tables: each C++ value has its
// table's name (the spelling the CRD and TFJob use), and that name, in any
// case, parses back to the value.
template <typename E>
void ExpectEveryValueNamedAndParsedBack(const EnumTable& t, std::string_view (*name_of)(E), size_t count) {
  ASSERT_EQ(t.values.size(), count) << t.what;
  for (size_t i = 0; i < count; ++i) {
    const E value = static_cast<E>(i);
    const std::string_view name = name_of(value);
    EXPECT_FALSE(name.empty()) << t.what << " " << i;
    EXPECT_EQ(name, t.NameOf(static_cast<int>(i))) << t.what;
    EXPECT_EQ(*t.Parse(name, "f"), static_cast<int>(i)) << name;
    EXPECT_EQ(*t.Parse(Upper(name), "f"), static_cast<int>(i)) << name;
  }
}

TEST(EnumNames, TheJobModelsEnumsNameEveryValueAndParseBack) {
  ExpectEveryValueNamedAndParsedBack(ReplicaTypeTable(), ReplicaTypeName, std::size(kAllReplicaTypes));
  ExpectEveryValueNamedAndParsedBack(RestartPolicyTable(), RestartPolicyName, 4);
  ExpectEveryValueNamedAndParsedBack(CleanPodPolicyTable(), CleanPodPolicyName, 3);
  ExpectEveryValueNamedAndParsedBack(RecoveryPolicyTable(), RecoveryPolicyName, 2);
  ExpectEveryValueNamedAndParsedBack(ConditionTypeTable(), ConditionTypeName, std::size(kAllConditionTypes));
  for (size_t i = 0; i < std::size(kAllReplicaTypes); ++i) {
    EXPECT_EQ(static_cast<size_t>(kAllReplicaTypes[i]), i);
    EXPECT_EQ(ParseReplicaType(ReplicaTypeName(kAllReplicaTypes[i])), kAllReplicaTypes[i]);
    EXPECT_EQ(ParseReplicaType(ReplicaTypeLower(kAllReplicaTypes[i])), kAllReplicaTypes[i]);
  }
  for (size_t i = 0; i < std::size(kAllConditionTypes); ++i) {
    EXPECT_EQ(static_cast<size_t>(kAllConditionTypes[i]), i);
  }
}

// The enumerators carry the names of their own meaning (a table listed in
// another order than the enum would pass the test above).
TEST(EnumNames, TheJobModelsEnumeratorsHaveTheirOwnNames) {
  EXPECT_EQ(ReplicaTypeName(ReplicaType::kChief), "Chief");
  EXPECT_EQ(ReplicaTypeName(ReplicaType::kWorker), "Worker");
  EXPECT_EQ(ReplicaTypeName(ReplicaType::kPS), "PS");
  EXPECT_EQ(ReplicaTypeName(ReplicaType::kEvaluator), "Evaluator");
  EXPECT_EQ(ReplicaTypeLower(ReplicaType::kPS), "ps");
  EXPECT_EQ(ReplicaTypeLower(ReplicaType::kEvaluator), "evaluator");
  EXPECT_EQ(ParseReplicaType("Master"), ReplicaType::kChief);
  EXPECT_EQ(ParseReplicaType("master"), ReplicaType::kChief);
  EXPECT_EQ(ParseReplicaType("launcher"), std::nullopt);
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kNever), "Never");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kOnFailure), "OnFailure");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kAlways), "Always");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kExitCode), "ExitCode");
  EXPECT_EQ(CleanPodPolicyName(CleanPodPolicy::kAll), "All");
  EXPECT_EQ(CleanPodPolicyName(CleanPodPolicy::kRunning), "Running");
  EXPECT_EQ(CleanPodPolicyName(CleanPodPolicy::kNone), "None");
  EXPECT_EQ(RecoveryPolicyName(RecoveryPolicy::kJob), "Job");
  EXPECT_EQ(RecoveryPolicyName(RecoveryPolicy::kInPlace), "InPlace");
  EXPECT_EQ(ConditionTypeName(ConditionType::kCreated), "Created");
  EXPECT_EQ(ConditionTypeName(ConditionType::kQueued), "Queued");
  EXPECT_EQ(ConditionTypeName(ConditionType::kRunning), "Running");
  EXPECT_EQ(ConditionTypeName(ConditionType::kRestarting), "Restarting");
  EXPECT_EQ(ConditionTypeName(ConditionType::kSucceeded), "Succeeded");
  EXPECT_EQ(ConditionTypeName(ConditionType::kFailed), "Failed");
  EXPECT_EQ(ConditionTypeName(ConditionType::kSuspended), "Suspended");
  EXPECT_EQ(ConditionTypeName(ConditionType::kRecovering), "Recovering");
}

}  // namespace
}  // namespace ringmaster
