// What every Ringmaster TensorFlow kernel shares: status and dtype mapping,
// the per-call options and whose error types a call raises, pre/post-
// scaling, and the group or process set a kernel runs in. The agreement
// every member reaches before a collective moves data is agreement.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/ringmaster.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace ringmaster_tf {

using tensorflow::DataType;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

inline constexpr char kNoCommunicator[] =
    "Ringmaster has no collective group in this process: call ringmaster.tensorflow.init() first";

inline absl::Status FromCode(int code, const std::string& message) {
  if (code == RM_OK) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(code), message.empty() ? "ringmaster: error" : message);
}

inline absl::Status LastError(int code) {
  return FromCode(code, rm_last_error());
}

// TensorFlow's dtype -> the engine's, matched by name: the engine's names
// (rm_dtype_name: "float16", "float32", ...) are the NumPy names that
// TensorFlow's DataTypeFromString reads too, so no list of dtypes is
// written here (ringmaster/enums.h owns them).
inline absl::Status ToRmDtype(DataType dt, rm_dtype* out) {
  static const std::vector<std::pair<DataType, rm_dtype>> table = [] {
    std::vector<std::pair<DataType, rm_dtype>> t;
    for (int v = 0; const char* name = rm_dtype_name(v); ++v) {
      DataType tf;
      if (tensorflow::DataTypeFromString(name, &tf)) t.emplace_back(tf, static_cast<rm_dtype>(v));
    }
    return t;
  }();
  for (const auto& [tf, rm] : table) {
    if (tf == dt) {
      *out = rm;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("ringmaster: unsupported dtype " + tensorflow::DataTypeString(dt));
}

// The op's type constraint, "{float16, bfloat16, ...}": the engine's dtypes
// by name (TensorFlow reads them as its own), bool only where it moves.
inline std::string OpTypes(bool with_bool) {
  std::string list;
  for (int v = 0; const char* name = rm_dtype_name(v); ++v) {
    if (!with_bool && v == RM_BOOL) continue;
    list += (list.empty() ? "{" : ", ") + std::string(name);
  }
  return list + "}";
}

inline rm_tensor View(const Tensor& t) {
  rm_tensor v;
  v.data = const_cast<char*>(t.tensor_data().data());
  v.count = t.NumElements();
  v.dtype = RM_FLOAT32;
  (void)ToRmDtype(t.dtype(), &v.dtype);  // the op's type constraint admits only mapped dtypes
  return v;
}

// Whose error types a mismatch gets: Horovod's (FailedPrecondition) or
// TensorFlow's strategy's (InvalidArgument, "Shape mismatch ...").
enum class ErrorStyle { kHorovod, kTensorFlow };

inline absl::Status ReadErrorStyle(OpKernelConstruction* c, ErrorStyle* style) {
  std::string name;
  TF_RETURN_IF_ERROR(c->GetAttr("errors", &name));
  *style = name == "tensorflow" ? ErrorStyle::kTensorFlow : ErrorStyle::kHorovod;
  return absl::OkStatus();
}

// The options every op carries as attributes (RINGMASTER_OPTION_ATTRS),
// written by CommunicationOptions._to_c, the one encoding of rm_options.
// Not checked here: the engine checks them once, with the call, naming the
// field (a kernel's error then comes from its first run, as TF's own do).
inline absl::Status ReadOptions(OpKernelConstruction* c, rm_options* o) {
  *o = rm_default_options();
  int64_t bpp = 0;
  float timeout = RM_TIMEOUT_KEEP;
  int impl = RM_AUTO, algorithm = RM_ALGORITHM_AUTO;
  TF_RETURN_IF_ERROR(c->GetAttr("bytes_per_pack", &bpp));
  TF_RETURN_IF_ERROR(c->GetAttr("timeout_seconds", &timeout));
  TF_RETURN_IF_ERROR(c->GetAttr("implementation", &impl));
  TF_RETURN_IF_ERROR(c->GetAttr("algorithm", &algorithm));
  o->bytes_per_pack = bpp;
  o->timeout_seconds = timeout;
  o->implementation = static_cast<rm_implementation>(impl);
  o->algorithm = static_cast<rm_algorithm>(algorithm);
  return absl::OkStatus();
}

// Horovod's reduce op (Horovod's numbering, ringmaster/enums.h) -> the engine's.
inline absl::Status ToRmReduceOp(int horovod_op, rm_reduce_op* out) {
  const int op = rm_horovod_reduce_op_engine(horovod_op);
  if (op >= 0) {
    *out = static_cast<rm_reduce_op>(op);
    return absl::OkStatus();
  }
  if (const char* name = rm_horovod_reduce_op_name(horovod_op))
    return absl::UnimplementedError(std::string("reduce_op: ") + name + " is not implemented by Ringmaster");
  return absl::InvalidArgumentError("reduce_op: unknown value " + std::to_string(horovod_op));
}

// dst[i] = cast(src[i] * factor), in float64 for integers and float64, in
// float32 for the 16-bit floats and float32: Horovod's scaling arithmetic.
template <typename T, typename W>
void ScaleAs(const Tensor& src, Tensor* dst, double factor) {
  auto in = src.flat<T>();
  auto out = dst->flat<T>();
  const W f = static_cast<W>(factor);
  for (int64_t i = 0; i < in.size(); ++i) out(i) = static_cast<T>(static_cast<W>(in(i)) * f);
}

inline absl::Status Scale(const Tensor& src, Tensor* dst, double factor) {
  switch (src.dtype()) {
    case tensorflow::DT_HALF:
      ScaleAs<Eigen::half, float>(src, dst, factor);
      break;
    case tensorflow::DT_BFLOAT16:
      ScaleAs<tensorflow::bfloat16, float>(src, dst, factor);
      break;
    case tensorflow::DT_FLOAT:
      ScaleAs<float, float>(src, dst, factor);
      break;
    case tensorflow::DT_DOUBLE:
      ScaleAs<double, double>(src, dst, factor);
      break;
    case tensorflow::DT_INT32:
      ScaleAs<int32_t, double>(src, dst, factor);
      break;
    case tensorflow::DT_INT64:
      ScaleAs<int64_t, double>(src, dst, factor);
      break;
    case tensorflow::DT_UINT8:
      ScaleAs<uint8_t, double>(src, dst, factor);
      break;
    case tensorflow::DT_INT8:
      ScaleAs<int8_t, double>(src, dst, factor);
      break;
    case tensorflow::DT_UINT16:
      ScaleAs<uint16_t, double>(src, dst, factor);
      break;
    case tensorflow::DT_INT16:
      ScaleAs<int16_t, double>(src, dst, factor);
      break;
    default:
      return absl::InvalidArgumentError("prescale_factor/postscale_factor: cannot scale a " +
                                        tensorflow::DataTypeString(src.dtype()) + " tensor");
  }
  return absl::OkStatus();
}

inline absl::Status Communicator(rm_communicator** comm) {
  *comm = rm_default_communicator();
  if (*comm == nullptr) return absl::FailedPreconditionError(kNoCommunicator);
  return absl::OkStatus();
}

// The communicator of process set `id` (0: the whole group), as the Python
// package registered it (rm_set_process_set_communicator). Python refuses
// ids it never added (ValueError, as Horovod); a registered set this process
// is not a member of has no communicator here: InvalidArgument, as Horovod.
inline absl::Status Communicator(int id, rm_communicator** comm) {
  if (id == 0) return Communicator(comm);
  if (rm_default_communicator() == nullptr) return absl::FailedPreconditionError(kNoCommunicator);
  *comm = rm_process_set_communicator(id);
  if (*comm == nullptr) {
    const char* me = rm_task_name(rm_default_communicator(), rm_rank(rm_default_communicator()));
    return absl::InvalidArgumentError("process set " + std::to_string(id) + ": " +
                                      (me ? me : "this process") + " is not one of its members");
  }
  return absl::OkStatus();
}

// The common attributes of every collective op.
// rm_options' fields, in its encoding (0 / RM_TIMEOUT_KEEP / AUTO keep the
// job's defaults); "errors": whose error types a mismatch gets (ErrorStyle).
#define RINGMASTER_OPTION_ATTRS                \
  Attr("bytes_per_pack: int = 0")              \
      .Attr("timeout_seconds: float = -1")     \
      .Attr("implementation: int = 0")         \
      .Attr("algorithm: int = 0")              \
      .Attr("process_set_id: int = 0")         \
      .Attr("ignore_name_scope: bool = false") \
      .Attr("errors: {'horovod', 'tensorflow'} = 'horovod'")

// The op's process set (its "process_set_id" attribute; 0: the whole group).
inline absl::Status ReadProcessSet(OpKernelConstruction* c, int* id) {
  TF_RETURN_IF_ERROR(c->GetAttr("process_set_id", id));
  if (*id < 0) return absl::InvalidArgumentError("process_set_id: must be >= 0, got " + std::to_string(*id));
  return absl::OkStatus();
}

}  // namespace ringmaster_tf
