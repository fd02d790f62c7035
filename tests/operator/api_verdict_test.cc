// What the operator makes of the API server's answers about its own objects.
#include "api_verdict.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(LeaseVerdict, MissingNamespaceWillNotHealAndSaysWhatToDo) {
  ApiVerdict v = JudgeLeaseAnswer("create", 404, "namespaces \"ringmaster-system\" not found",
                                  "ringmaster-system", "ringmaster-operator");
  EXPECT_FALSE(v.heals);
  EXPECT_NE(v.message.find("namespace \"ringmaster-system\" does not exist"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("--leader-election-namespace"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("--leader-elect=false"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("kubectl create namespace ringmaster-system"), std::string::npos) << v.message;
}

TEST(LeaseVerdict, AGetThatFindsNoLeaseIsNotTheNamespace) {
  // GET answers 404 whether or not the namespace exists: only create knows.
  EXPECT_TRUE(JudgeLeaseAnswer("get", 404, "not found", "ns", "l").heals);
}

TEST(LeaseVerdict, ForbiddenWillNotHealAndNamesTheVerbAndRole) {
  for (const char* verb : {"get", "create", "update"}) {
    ApiVerdict v = JudgeLeaseAnswer(verb, 403, "leases is forbidden", "team-a", "lease-x");
    EXPECT_FALSE(v.heals) << verb;
    EXPECT_NE(
        v.message.find(std::string("may not ") + verb + " the leader-election Lease \"team-a/lease-x\""),
        std::string::npos)
        << v.message;
    EXPECT_NE(v.message.find("leases is forbidden"), std::string::npos) << v.message;
  }
}

TEST(LeaseVerdict, TransientAnswersAreRetriedButNotSilent) {
  for (int code : {0, 401, 429, 500, 503}) {
    ApiVerdict v = JudgeLeaseAnswer("update", code, "boom", "ns", "l");
    EXPECT_TRUE(v.heals) << code;
    EXPECT_NE(v.message.find("retrying"), std::string::npos) << v.message;
  }
  EXPECT_TRUE(JudgeLeaseAnswer("get", 200, "", "ns", "l").message.empty());
}

TEST(ListVerdict, MissingCrdAndForbiddenSayWhatIsMissing) {
  ApiVerdict crd =
      JudgeListAnswer("distributedjobs", "/apis/ringmaster.io/v1/distributedjobs", 404, "not found");
  EXPECT_FALSE(crd.heals);
  EXPECT_NE(crd.message.find("CRD is not installed"), std::string::npos) << crd.message;
  ApiVerdict tf = JudgeListAnswer("tfjobs", "/apis/kubeflow.org/v1/tfjobs", 404, "not found");
  EXPECT_FALSE(tf.heals);
  EXPECT_NE(tf.message.find("--tfjob needs the TFJob CRD"), std::string::npos) << tf.message;
  ApiVerdict rbac = JudgeListAnswer("pods", "/api/v1/namespaces/a/pods", 403, "forbidden");
  EXPECT_FALSE(rbac.heals);
  EXPECT_NE(rbac.message.find("list and watch on pods"), std::string::npos) << rbac.message;
  EXPECT_TRUE(JudgeListAnswer("pods", "/api/v1/pods", 500, "etcd").heals);
}

}  // namespace
}  // namespace ringmaster::op
