// ringmaster._core: a thin nanobind layer over libringmaster's C API (the
// same API the TensorFlow op uses, so both share one communicator through
// rm_default_communicator). Array handling lives in Python (DLPack's too:
// _dlpack.py hands CUDA arrays here as addresses); the enums' names and
// values come from the C API's one table (enum_names, parse_enum: Python
// lists none of them); this layer owns the C objects, releases the
// GIL around every call that can block, and turns status codes into the
// package's exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ringmaster/ringmaster.h"

namespace nb = nanobind;

namespace {

// (address, element count, rm_dtype): Python has already checked the array
// is C-contiguous and writable, and keeps it alive: CPU memory, or for the
// *_on_stream calls CUDA memory (ringmaster/_dlpack.py).
using TensorSpec = std::tuple<std::uintptr_t, int64_t, int>;
// (bytes_per_pack, timeout_seconds (RM_TIMEOUT_KEEP: job default),
// rm_implementation, rm_algorithm): CommunicationOptions._to_c.
using OptionsSpec = std::tuple<int64_t, double, int, int>;

[[noreturn]] void Raise(int code, const std::string& message) {
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

std::vector<rm_tensor> ToTensors(const std::vector<TensorSpec>& specs) {
  std::vector<rm_tensor> out;
  out.reserve(specs.size());
  for (const auto& [addr, count, dtype] : specs) {
    out.push_back(rm_tensor{reinterpret_cast<void*>(addr), count, static_cast<rm_dtype>(dtype)});
  }
  return out;
}

rm_tensor ToTensor(const TensorSpec& spec) {
  return rm_tensor{reinterpret_cast<void*>(std::get<0>(spec)), std::get<1>(spec),
                   static_cast<rm_dtype>(std::get<2>(spec))};
}

struct Options {
  rm_options value;
  const rm_options* get() const { return &value; }
};

Options ToOptions(const std::optional<OptionsSpec>& spec) {
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

EnumFns EnumOf(const std::string& kind) {
  if (kind == "dtype") return {rm_dtype_name, rm_parse_dtype};
  if (kind == "reduce_op") return {rm_reduce_op_name, rm_parse_reduce_op};
  if (kind == "implementation") return {rm_implementation_name, rm_parse_implementation};
  if (kind == "algorithm") return {rm_algorithm_name, rm_parse_algorithm};
  Raise(RM_INVALID_ARGUMENT, "kind: not an enum of ringmaster.h: " + kind);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "ringmaster's C API (internal: use the ringmaster package)";

  m.attr("TIMEOUT_KEEP") = RM_TIMEOUT_KEEP;
  m.def(
      "enum_names",
      [](const std::string& kind) {
        std::vector<std::string> names;
        const EnumFns fns = EnumOf(kind);
        for (int v = 0; fns.name(v) != nullptr; ++v) names.push_back(fns.name(v));
        return names;
      },
      "The names of an enum (dtype, reduce_op, implementation, algorithm), by value.");
  m.def(
      "parse_enum",
      [](const std::string& kind, const std::string& text, const std::string& field) {
        int value = 0;
        if (EnumOf(kind).parse(text.c_str(), field.c_str(), &value) != RM_OK) {
          // The message without the code's name: "FIELD: unknown ...".
          std::string message = rm_last_error();
          const std::string prefix = "InvalidArgument: ";
          if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
          Raise(RM_INVALID_ARGUMENT, message);
        }
        return value;
      },
      "The value of a name (any case, or an alias); InvalidArgumentError naming `field` otherwise.");
  m.def(
      "horovod_reduce_ops",
      [] {
        std::vector<std::pair<std::string, int>> ops;
        for (int v = 0; const char* name = rm_horovod_reduce_op_name(v); ++v)
          ops.emplace_back(name, rm_horovod_reduce_op_engine(v));
        return ops;
      },
      "Horovod's reduce ops by Horovod's value (ringmaster/enums.h): (its name, the engine's op or -1).");
  m.def(
      "job_options",
      [] {
        rm_options o = rm_default_options();
        if (rm_job_options(&o) != RM_OK) Raise(RM_INVALID_ARGUMENT, rm_last_error());
        return OptionsSpec{o.bytes_per_pack, o.timeout_seconds, o.implementation, o.algorithm};
      },
      "The job's defaults from RINGMASTER_*, as the communicator reads them (an OptionsSpec).");

  nb::class_<Comm>(m, "Comm")
      .def_static("from_environment", &Comm::FromEnvironment, nb::rv_policy::take_ownership)
      .def_prop_ro("alive", &Comm::alive)
      .def("rank", [](const Comm& c) { return rm_rank(c.get()); })
      .def("size", [](const Comm& c) { return rm_size(c.get()); })
      .def("task_name",
           [](const Comm& c, int rank) -> std::string {
             const char* name = rm_task_name(c.get(), rank);
             if (!name) {
               Raise(RM_INVALID_ARGUMENT, "INVALID_ARGUMENT: rank: must be in [0, " +
                                              std::to_string(rm_size(c.get())) + "), got " +
                                              std::to_string(rank));
             }
             return name;
           })
      .def("health",
           [](const Comm& c) {
             int code = rm_health(c.get());
             if (code != RM_OK) Raise(code, rm_last_error());
           })
      .def("destroy", &Comm::Destroy)
      .def(
          "add_process_set",
          [](const Comm& c, int id, const std::vector<int>& ranks) -> Comm* {
            rm_communicator* comm = c.get();
            rm_communicator* set = nullptr;
            CallReleased([&] { return rm_process_set_add(comm, id, ranks.data(), ranks.size(), &set); });
            return set ? new Comm(set) : nullptr;
          },
          nb::rv_policy::take_ownership)
      .def("start_timeline",
           [](const Comm& c, const std::string& path) {
             int code = rm_start_timeline(c.get(), path.c_str());
             if (code != RM_OK) Raise(code, rm_last_error());
           })
      .def("stop_timeline",
           [](const Comm& c) {
             int code = rm_stop_timeline(c.get());
             if (code != RM_OK) Raise(code, rm_last_error());
           })
      .def("process_set_id", [](const Comm& c) { return rm_process_set_id(c.get()); })
      .def("register_process_set",
           [](const Comm& c) { rm_set_process_set_communicator(rm_process_set_id(c.get()), c.get()); })
      .def("set_default", [](const Comm& c) { rm_set_default_communicator(c.get()); })
      .def("is_default", [](const Comm& c) { return c.alive() && rm_default_communicator() == c.get(); })
      .def("allreduce",
           [](const Comm& c, const std::vector<TensorSpec>& specs, int op, std::optional<OptionsSpec> o) {
             auto ts = ToTensors(specs);
             auto opts = ToOptions(o);
             rm_communicator* comm = c.get();
             CallReleased([&] {
               return rm_allreduce(comm, ts.data(), ts.size(), static_cast<rm_reduce_op>(op), opts.get());
             });
           })
      .def("allreduce_from",
           [](const Comm& c, const std::vector<std::uintptr_t>& sources, const std::vector<TensorSpec>& specs,
              int op, std::optional<OptionsSpec> o) {
             auto ts = ToTensors(specs);
             auto opts = ToOptions(o);
             std::vector<const void*> from;
             for (std::uintptr_t s : sources) from.push_back(reinterpret_cast<const void*>(s));
             rm_communicator* comm = c.get();
             CallReleased([&] {
               rm_handle* h = nullptr;
               int code = rm_allreduce_async_from(comm, from.data(), ts.data(), ts.size(),
                                                  static_cast<rm_reduce_op>(op), opts.get(), &h);
               return code != RM_OK ? code : rm_handle_wait(h);
             });
           })
      .def(
          "allreduce_async",
          [](const Comm& c, const std::vector<TensorSpec>& specs, int op, std::optional<OptionsSpec> o,
             nb::object keep) {
            auto ts = ToTensors(specs);
            auto opts = ToOptions(o);
            rm_communicator* comm = c.get();
            rm_handle* h = nullptr;
            // Starting may block briefly on the engine's queue: no GIL.
            CallReleased([&] {
              return rm_allreduce_async(comm, ts.data(), ts.size(), static_cast<rm_reduce_op>(op), opts.get(),
                                        &h);
            });
            return new Handle(h, std::move(keep));
          },
          nb::rv_policy::take_ownership)
      .def("allreduce_on_stream",
           [](const Comm& c, const std::vector<TensorSpec>& specs, const std::vector<std::uintptr_t>& sources,
              int op, std::optional<OptionsSpec> o, std::uintptr_t stream) {
             auto ts = ToTensors(specs);
             auto opts = ToOptions(o);
             std::vector<const void*> from;  // 0: in place
             for (std::uintptr_t s : sources) from.push_back(reinterpret_cast<const void*>(s));
             rm_communicator* comm = c.get();
             CallReleased([&] {
               rm_handle* h = nullptr;
               int code = rm_allreduce_async_on_stream_from(comm, from.empty() ? nullptr : from.data(), ts.data(),
                                                            ts.size(), static_cast<rm_reduce_op>(op), opts.get(),
                                                            reinterpret_cast<void*>(stream), &h);
               return code != RM_OK ? code : rm_handle_wait(h);
             });
           })
      .def(
          "allreduce_on_stream_async",
          [](const Comm& c, const std::vector<TensorSpec>& specs, int op, std::optional<OptionsSpec> o,
             std::uintptr_t stream, nb::object keep) {
            auto ts = ToTensors(specs);
            auto opts = ToOptions(o);
            rm_communicator* comm = c.get();
            rm_handle* h = nullptr;
            CallReleased([&] {
              return rm_allreduce_async_on_stream(comm, ts.data(), ts.size(), static_cast<rm_reduce_op>(op),
                                                  opts.get(), reinterpret_cast<void*>(stream), &h);
            });
            return new Handle(h, std::move(keep));
          },
          nb::rv_policy::take_ownership)
      .def("broadcast",
           [](const Comm& c, const std::vector<TensorSpec>& specs, int root, std::optional<OptionsSpec> o) {
             auto ts = ToTensors(specs);
             auto opts = ToOptions(o);
             rm_communicator* comm = c.get();
             CallReleased([&] { return rm_broadcast(comm, ts.data(), ts.size(), root, opts.get()); });
           })
      .def("allgather",
           [](const Comm& c, const TensorSpec& in, const TensorSpec& out, std::optional<OptionsSpec> o) {
             rm_tensor i = ToTensor(in), u = ToTensor(out);
             auto opts = ToOptions(o);
             rm_communicator* comm = c.get();
             CallReleased([&] { return rm_allgather(comm, &i, &u, opts.get()); });
           })
      .def("barrier",
           [](const Comm& c, std::optional<OptionsSpec> o) {
             auto opts = ToOptions(o);
             rm_communicator* comm = c.get();
             CallReleased([&] { return rm_barrier(comm, opts.get()); });
           })
      .def("reduce",
           [](const Comm& c, int op, const TensorSpec& value, const std::vector<int64_t>& shape,
              std::optional<int> axis, const TensorSpec& out, std::optional<OptionsSpec> o) {
             rm_tensor v = ToTensor(value), u = ToTensor(out);
             auto opts = ToOptions(o);
             rm_communicator* comm = c.get();
             CallReleased([&] {
               return rm_reduce(comm, static_cast<rm_reduce_op>(op), &v, shape.data(),
                                static_cast<int>(shape.size()), axis ? 1 : 0, axis.value_or(0), &u,
                                opts.get());
             });
           })
      .def("abort",
           [](const Comm& c, const std::string& reason) {
             rm_communicator* comm = c.get();
             nb::gil_scoped_release release;
             rm_abort(comm, reason.c_str());
           })
      .def("reform",
           [](const Comm& c) {
             rm_communicator* comm = c.get();
             CallReleased([&] { return rm_reform(comm); });
           })
      .def("agree_on_resume",
           [](const Comm& c, int64_t committed_step) {
             rm_communicator* comm = c.get();
             int64_t step = -1;
             int root = 0;
             CallReleased([&] { return rm_agree_on_resume(comm, committed_step, &step, &root); });
             return nb::make_tuple(step, root);
           })
      .def("agree_on_joiners", [](const Comm& c) {
        rm_communicator* comm = c.get();
        int joiners = 0;
        CallReleased([&] { return rm_agree_on_joiners(comm, &joiners); });
        return joiners;
      });

  nb::class_<Handle>(m, "Handle").def("done", &Handle::Done).def("wait", &Handle::Wait);

  m.def("clear_default", [] { rm_set_default_communicator(nullptr); });
  m.def("has_default", [] { return rm_default_communicator() != nullptr; });
}
