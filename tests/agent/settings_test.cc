// The agent's settings from the environment (settings.cc): bad values
// refused naming them, control ports parsed, a taken port named.
#include <gtest/gtest.h>

#include "group_util.h"
#include "transport/net.h"

namespace ringmaster {
namespace {

using testing::LocalSettings;

TEST(Settings, FromEnvironmentRejectsBadValues) {
  ::setenv("TF_CONFIG",
           R"({"cluster":{"worker":["127.0.0.1:1","127.0.0.1:2"]},"task":{"type":"worker","index":1}})", 1);
  ::setenv("RINGMASTER_STREAMS", "99", 1);
  auto s = CommunicatorSettings::FromEnvironment();
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("RINGMASTER_STREAMS"), std::string::npos);
  ::unsetenv("RINGMASTER_STREAMS");
  ::setenv("RINGMASTER_BYTES_PER_PACK", "-5", 1);
  s = CommunicatorSettings::FromEnvironment();
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("RINGMASTER_BYTES_PER_PACK"), std::string::npos);
  ::unsetenv("RINGMASTER_BYTES_PER_PACK");
  ::setenv("RINGMASTER_PORT", "7777", 1);
  ::setenv("RINGMASTER_TIMEOUT_SECONDS", "2.5", 1);
  s = CommunicatorSettings::FromEnvironment();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->control_ports, std::vector<int>{7777});
  EXPECT_EQ(*s->group.rank, 1);
  EXPECT_EQ(s->defaults.timeout_seconds, 2.5);
  ::unsetenv("RINGMASTER_PORT");
  ::unsetenv("RINGMASTER_TIMEOUT_SECONDS");
  ::setenv("TF_CONFIG", R"({"cluster":{"worker":["a:1"],"ps":["b:2"]},"task":{"type":"ps","index":0}})", 1);
  s = CommunicatorSettings::FromEnvironment();
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  ::setenv("TF_CONFIG", "{not json", 1);
  s = CommunicatorSettings::FromEnvironment();
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  ::unsetenv("TF_CONFIG");
}

// RINGMASTER_PORT: one port for every member, or one per member in rank order.
TEST(Settings, ControlPortsParse) {
  auto one = CommunicatorSettings::ParseControlPorts("2223", 3);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, std::vector<int>{2223});
  auto each = CommunicatorSettings::ParseControlPorts("41000,41001,41002", 3);
  ASSERT_TRUE(each.ok()) << each.status().ToString();
  EXPECT_EQ(*each, (std::vector<int>{41000, 41001, 41002}));
  auto none = CommunicatorSettings::ParseControlPorts("", 3);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  for (const char* bad : {"0", "65536", "41000,41001", "41000,,41002", "x", "41000,41001,41002,", "-1"}) {
    auto s = CommunicatorSettings::ParseControlPorts(bad, 3);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.status().message().find("RINGMASTER_PORT"), std::string::npos) << s.status().ToString();
  }
  auto count = CommunicatorSettings::ParseControlPorts("1,2", 3);
  EXPECT_NE(count.status().message().find("2 ports for 3 members"), std::string::npos)
      << count.status().ToString();
}

// A port that is taken (TensorFlow's server has it, say) fails at once with
// the cause, the port and the setting that changes it.
TEST(Settings, TakenControlPortSaysAddressInUse) {
  int taken = 0;
  auto fd = internal::Listen(0, &taken);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  auto settings = testing::LocalSettings(2);
  settings[0].control_ports = {taken, taken + 1 > 65535 ? 1 : taken + 1};
  auto c = Communicator::Create(settings[0]);
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  const std::string msg = c.status().message();
  EXPECT_NE(msg.find("address already in use"), std::string::npos) << msg;
  EXPECT_NE(msg.find("port " + std::to_string(taken)), std::string::npos) << msg;
  EXPECT_NE(msg.find("RINGMASTER_PORT"), std::string::npos) << msg;

  // Without RINGMASTER_PORT the leader takes its TF_CONFIG port + 1, never
  // the TF_CONFIG port itself.
  auto defaults = testing::LocalSettings(2);
  defaults[0].control_ports.clear();
  defaults[0].group.members[0].address = "127.0.0.1:" + std::to_string(taken - 1);
  c = Communicator::Create(defaults[0]);
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("port " + std::to_string(taken) + ":"), std::string::npos)
      << c.status().ToString();
  int raw = *fd;
  internal::CloseFd(raw);
}

}  // namespace
}  // namespace ringmaster
