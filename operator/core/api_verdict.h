// What an API server's answer about the operator's own objects means: can
// waiting heal it, and what must the user be told. A missing lease namespace
// or a Role that forbids the lease never heals by itself, so the operator
// must say so as an error and stop instead of retrying in silence; a 5xx, a
// conflict or no answer at all may heal, so those are retried. Pure: the
// shells (kube/leader.cc, kube/informer.cc) do the requests and act on it.
#pragma once

#include <string>
#include <string_view>

namespace ringmaster::op {

struct ApiVerdict {
  bool heals = true;    // retrying may succeed without anyone acting
  std::string message;  // empty for a success; else what failed and what to do
};

// The answer to one request on the leader-election Lease `ns`/`name`.
// `verb`: get, create or update; `code`: the HTTP status (0: no answer);
// `server_message`: the API server's Status message.
ApiVerdict JudgeLeaseAnswer(std::string_view verb, int code, std::string_view server_message,
                            std::string_view ns, std::string_view name);

// The answer to a list of one of the operator's own resources (`resource`:
// e.g. "distributedjobs", at `path`). Installing the CRD or the Role heals
// these, so the informer keeps retrying, but it must say what is missing.
ApiVerdict JudgeListAnswer(std::string_view resource, std::string_view path, int code,
                           std::string_view server_message);

}  // namespace ringmaster::op
