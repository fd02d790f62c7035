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

#include "core_objects.h"
#include "ringmaster/ringmaster.h"

namespace nb = nanobind;

using namespace ringmaster_py;  // the bindings' own objects and conversions (core_objects.h)

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
               int code = rm_allreduce_async_on_stream_from(
                   comm, from.empty() ? nullptr : from.data(), ts.data(), ts.size(),
                   static_cast<rm_reduce_op>(op), opts.get(), reinterpret_cast<void*>(stream), &h);
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
