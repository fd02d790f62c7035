// What ringmaster._core's bindings (core.cc) hold and convert: the C
// objects they own (a Communicator, an all-reduce in flight), the tensor
// and options specs Python passes, the GIL released around every call that
// can block, and status codes raised as the package's exceptions.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ringmaster/ringmaster.h"

namespace ringmaster_py {

namespace nb = nanobind;

// (address, element count, rm_dtype): Python has already checked the array
// is C-contiguous and writable, and keeps it alive: CPU memory, or for the
// *_on_stream calls CUDA memory (ringmaster/_dlpack.py).
using TensorSpec = std::tuple<std::uintptr_t, int64_t, int>;
// (bytes_per_pack, timeout_seconds (RM_TIMEOUT_KEEP: job default),
// rm_implementation, rm_algorithm): CommunicationOptions._to_c.
using OptionsSpec = std::tuple<int64_t, double, int, int>;

[[noreturn]] inline void Raise(int code, const std::string& message) {
  // The exception classes are Python's (ringmaster._errors), so users and
  // the TensorFlow layer catch one hierarchy.
  nb::object err = nb::module_::import_("ringmaster._errors").attr("error_from_code")(code, message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
  throw nb::python_error();
}

// Runs `call` without the GIL; the message is read on the same thread
// (rm_last_error is thread-local) before anything else can overwrite it.
template <typename F>
void CallReleased(F&& call) {
  int code = 0;
  std::string message;
  {
    nb::gil_scoped_release release;
    code = call();
    if (code != RM_OK) message = rm_last_error();
  }
  if (code != RM_OK) Raise(code, message);
}

inline std::vector<rm_tensor> ToTensors(const std::vector<TensorSpec>& specs) {
  std::vector<rm_tensor> out;
  out.reserve(specs.size());
  for (const auto& [addr, count, dtype] : specs) {
    out.push_back(rm_tensor{reinterpret_cast<void*>(addr), count, static_cast<rm_dtype>(dtype)});
  }
  return out;
}

inline rm_tensor ToTensor(const TensorSpec& spec) {
  return rm_tensor{reinterpret_cast<void*>(std::get<0>(spec)), std::get<1>(spec),
                   static_cast<rm_dtype>(std::get<2>(spec))};
}

struct Options {
  rm_options value;
  const rm_options* get() const { return &value; }
};

inline Options ToOptions(const std::optional<OptionsSpec>& spec) {
  Options o{rm_default_options()};
  if (spec) {
    o.value.bytes_per_pack = std::get<0>(*spec);
    o.value.timeout_seconds = std::get<1>(*spec);
    o.value.implementation = static_cast<rm_implementation>(std::get<2>(*spec));
    o.value.algorithm = static_cast<rm_algorithm>(std::get<3>(*spec));
  }
  return o;
}

class Comm {
 public:
  explicit Comm(rm_communicator* c) : c_(c) {}
  ~Comm() { Destroy(); }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  static Comm* FromEnvironment() {
    rm_communicator* c = nullptr;
    CallReleased([&] { return rm_communicator_create_from_env(&c); });
    return new Comm(c);
  }

  rm_communicator* get() const {
    if (!c_) Raise(RM_FAILED_PRECONDITION, "FAILED_PRECONDITION: the communicator was shut down");
    return c_;
  }
  bool alive() const { return c_ != nullptr; }

  // Clears the process default first (the TF op must never find a dangling
  // pointer), then tears down the group without the GIL: it may wait for
  // the engine's threads.
  void Destroy() {
    rm_communicator* c = c_;
    if (!c) return;
    c_ = nullptr;
    if (rm_default_communicator() == c) rm_set_default_communicator(nullptr);
    nb::gil_scoped_release release;
    rm_communicator_destroy(c);
  }

 private:
  rm_communicator* c_;
};

// An all-reduce in flight. `keep` holds the arrays (and the communicator)
// until the call is over, whatever happens to the Python objects.
class Handle {
 public:
  Handle(rm_handle* h, nb::object keep) : h_(h), keep_(std::move(keep)) {}
  ~Handle() {
    // Never free arrays the engine may still write: wait first.
    if (h_) {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      if (h_) rm_handle_wait(h_);
      h_ = nullptr;
    }
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  bool Done() {
    // Never block here (we hold the GIL): a thread inside Wait() owns the
    // lock, and the call is not over until its Wait() returns.
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    return !h_ || rm_handle_done(h_) != 0;
  }

  void Wait() {
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);  // a second waiter waits here
      if (h_) {
        code_ = rm_handle_wait(h_);  // frees the handle
        if (code_ != RM_OK) message_ = rm_last_error();
        h_ = nullptr;
      }
    }
    keep_ = nb::object();
    if (code_ != RM_OK) Raise(code_, message_);
  }

 private:
  std::mutex mu_;
  rm_handle* h_;
  int code_ = RM_OK;
  std::string message_;
  nb::object keep_;
};

// The C API's name and parse functions of one enum (enums.h's tables).
struct EnumFns {
  const char* (*name)(int);
  int (*parse)(const char*, const char*, int*);
};

inline EnumFns EnumOf(const std::string& kind) {
  if (kind == "dtype") return {rm_dtype_name, rm_parse_dtype};
  if (kind == "reduce_op") return {rm_reduce_op_name, rm_parse_reduce_op};
  if (kind == "implementation") return {rm_implementation_name, rm_parse_implementation};
  if (kind == "algorithm") return {rm_algorithm_name, rm_parse_algorithm};
  Raise(RM_INVALID_ARGUMENT, "kind: not an enum of ringmaster.h: " + kind);
}

}  // namespace ringmaster_py
