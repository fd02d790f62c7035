// What the C API's two files share: the thread's last error (rm_last_error)
// and the conversion of rm_options. c_api.cc holds the calls,
// c_api_options.cc the options, the enums' names and the job's defaults.
#pragma once

#include <string>

#include "ringmaster/comm_options.h"
#include "ringmaster/ringmaster.h"
#include "ringmaster/status.h"

namespace ringmaster::internal {

// Sets the calling thread's rm_last_error() from `s`; returns its code.
int Report(const Status& s);

// rm_options as the engine's options: only the fields the caller's `size`
// covers (a struct compiled before a field existed leaves it at its
// default). The values are checked once, by the engine, with the rest of
// the call (CommunicationOptions::Validate names the field); here only what
// C alone can get wrong (the size). NULL is every default.
StatusOr<CommunicationOptions> ToOptions(const rm_options* o);

}  // namespace ringmaster::internal
