// The operator's kubeconfig parser (ParseKubeconfig) and its base64 decoder,
// with files read through a fake: a path containing "missing" is NotFound,
// any other reads back as "<contents of PATH>".
#include "kubeconfig.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"

namespace {

using namespace ringmaster;
using fuzz::CheckError;

StatusOr<std::string> FakeRead(const std::string& path) {
  if (path.find("missing") != std::string::npos) return NotFoundError("cannot read " + path);
  return "<contents of " + path + ">";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  for (const char* context : {"", "testbed"}) {
    auto cfg = op::ParseKubeconfig(text, context, "/home/u/.kube", FakeRead);
    if (!cfg.ok()) {
      CheckError(cfg.status());
      continue;
    }
    FUZZ_CHECK(!cfg->server.empty());
    FUZZ_CHECK(cfg->server.back() != '/');
    FUZZ_CHECK(cfg->client_cert_pem.empty() == cfg->client_key_pem.empty());
    FUZZ_CHECK(cfg->token_file.empty() || cfg->token_file[0] == '/');
  }

  // Base64: at most 3 bytes out for every 4 characters in.
  auto decoded = op::Base64Decode(text);
  if (decoded.ok()) {
    FUZZ_CHECK(decoded->size() <= text.size() * 3 / 4);
  } else {
    CheckError(decoded.status());
  }
  return 0;
}
