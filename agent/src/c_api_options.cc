// The C API's options and enums: rm_options' conversion, the enums' names
// and parsers (read from enums.h's one table) and the job's defaults.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "c_api_internal.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::internal {

StatusOr<CommunicationOptions> ToOptions(const rm_options* o) {
  CommunicationOptions out;
  if (!o) return out;
  if (o->magic != RM_OPTIONS_MAGIC) {
    char got[16];
    std::snprintf(got, sizeof got, "0x%08x", o->magic);
    return InvalidArgumentError(
        std::string("options.magic: ") + got +
        " is not RM_OPTIONS_MAGIC: the caller was compiled against another layout of "
        "rm_options (another ringmaster.h); rebuild it against this library's header, "
        "starting from RM_OPTIONS_INIT or rm_default_options()");
  }
  if (o->size < offsetof(rm_options, implementation) + sizeof(o->implementation)) {
    return InvalidArgumentError("options.size: " + std::to_string(o->size) +
                                " is too small; start from RM_OPTIONS_INIT or rm_default_options()");
  }
  out.bytes_per_pack = o->bytes_per_pack;
  // RM_TIMEOUT_KEEP (any value < 0) keeps the default; NaN goes on to be
  // refused by the engine, naming the field.
  if (!(o->timeout_seconds < 0)) out.timeout_seconds = o->timeout_seconds;
  out.implementation = static_cast<Implementation>(o->implementation);
  if (o->size >= offsetof(rm_options, algorithm) + sizeof(o->algorithm)) {
    out.algorithm = static_cast<Algorithm>(o->algorithm);
  }
  return out;
}

namespace {

const char* NameOrNull(const EnumTable& t, int value) {
  // The names are the tables' string literals: NUL-terminated, static.
  return t.Contains(value) ? t.values[static_cast<size_t>(value)].name.data() : nullptr;
}

int ParseInto(const EnumTable& t, const char* text, const char* field, int* out) {
  const std::string where = field ? field : std::string(t.what);
  if (!text || !out) return Report(InvalidArgumentError(where + ": text or out is NULL"));
  auto v = t.Parse(text, where);
  if (!v.ok()) return Report(v.status());
  *out = *v;
  return Report(OkStatus());
}

}  // namespace
}  // namespace ringmaster::internal

using ringmaster::internal::NameOrNull;
using ringmaster::internal::ParseInto;

extern "C" {

rm_options rm_default_options(void) {
  return RM_OPTIONS_INIT;
}

int rm_job_options(rm_options* out) {
  if (!out) return ringmaster::internal::Report(ringmaster::InvalidArgumentError("out is NULL"));
  auto job = ringmaster::CommunicationOptions::FromEnv([](const char* name) { return std::getenv(name); });
  if (!job.ok()) return ringmaster::internal::Report(job.status());
  *out = RM_OPTIONS_INIT;
  out->bytes_per_pack = job->bytes_per_pack;
  out->timeout_seconds = job->EffectiveTimeout().value_or(RM_TIMEOUT_KEEP);
  out->implementation = static_cast<rm_implementation>(job->implementation);
  out->algorithm = static_cast<rm_algorithm>(job->algorithm);
  return ringmaster::internal::Report(ringmaster::OkStatus());
}

const char* rm_dtype_name(int value) {
  return NameOrNull(ringmaster::DTypeTable(), value);
}
const char* rm_reduce_op_name(int value) {
  return NameOrNull(ringmaster::ReduceOpTable(), value);
}
const char* rm_implementation_name(int value) {
  return NameOrNull(ringmaster::ImplementationTable(), value);
}
const char* rm_algorithm_name(int value) {
  return NameOrNull(ringmaster::AlgorithmTable(), value);
}
const char* rm_collective_name(int value) {
  return NameOrNull(ringmaster::CollectiveTable(), value);
}
const char* rm_horovod_reduce_op_name(int value) {
  return NameOrNull(ringmaster::HorovodReduceOpTable(), value);
}
int rm_horovod_reduce_op_engine(int value) {
  return ringmaster::HorovodToEngineReduceOp(value);
}
int rm_parse_dtype(const char* text, const char* field, int* out) {
  return ParseInto(ringmaster::DTypeTable(), text, field, out);
}
int rm_parse_reduce_op(const char* text, const char* field, int* out) {
  return ParseInto(ringmaster::ReduceOpTable(), text, field, out);
}
int rm_parse_implementation(const char* text, const char* field, int* out) {
  return ParseInto(ringmaster::ImplementationTable(), text, field, out);
}
int rm_parse_algorithm(const char* text, const char* field, int* out) {
  return ParseInto(ringmaster::AlgorithmTable(), text, field, out);
}

}  // extern "C"
