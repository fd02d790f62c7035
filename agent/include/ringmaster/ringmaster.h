/* The collective engine's C API: the same calls as ringmaster/communicator.h
 * for languages that link C. Every call returns a status code (0 = OK; the
 * values are gRPC's, see rm_status_code); rm_last_error() gives the message
 * of the calling thread's last failure. */
#ifndef RINGMASTER_RINGMASTER_H_
#define RINGMASTER_RINGMASTER_H_

#include <stddef.h>
#include <stdint.h>

#include "ringmaster/enums.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RM_OK = 0,
  RM_CANCELLED = 1,
  RM_UNKNOWN = 2,
  RM_INVALID_ARGUMENT = 3,
  RM_DEADLINE_EXCEEDED = 4,
  RM_RESOURCE_EXHAUSTED = 8,
  RM_FAILED_PRECONDITION = 9,
  RM_ABORTED = 10,
  RM_UNIMPLEMENTED = 12,
  RM_INTERNAL = 13,
  RM_UNAVAILABLE = 14,
  RM_UNAUTHENTICATED = 16
} rm_status_code;

/* The enums' values and names are written once, in ringmaster/enums.h. */
typedef enum { RM_DTYPE_TABLE(RM_ENUM_C_ENUMERATOR) } rm_dtype;
typedef enum { RM_REDUCE_OP_TABLE(RM_ENUM_C_ENUMERATOR) } rm_reduce_op;
typedef enum { RM_IMPLEMENTATION_TABLE(RM_ENUM_C_ENUMERATOR) } rm_implementation;
typedef enum { RM_ALGORITHM_TABLE(RM_ENUM_C_ENUMERATOR) } rm_algorithm;
typedef enum { RM_COLLECTIVE_TABLE(RM_ENUM_C_ENUMERATOR) } rm_collective;

/* Names, for messages and bindings: "float32", "sum", "AUTO", "ring"; NULL
 * for a value out of range. */
const char* rm_dtype_name(int value);
const char* rm_reduce_op_name(int value);
const char* rm_implementation_name(int value);
const char* rm_algorithm_name(int value);
const char* rm_collective_name(int value);
const char* rm_horovod_reduce_op_name(int value); /* Horovod's numbering: "Average" is 0 */
/* Case-insensitive, and the aliases of enums.h ("prod", "rd"). RM_OK and
 * the value in *out, or RM_INVALID_ARGUMENT with rm_last_error() naming
 * `field` (may be NULL) and listing the valid names. Bindings read the
 * tables through these instead of listing the values again. */
int rm_parse_dtype(const char* text, const char* field, int* out);
int rm_parse_reduce_op(const char* text, const char* field, int* out);
int rm_parse_implementation(const char* text, const char* field, int* out);
int rm_parse_algorithm(const char* text, const char* field, int* out);
/* The engine's rm_reduce_op for Horovod's reduce op `value` (enums.h), or
 * -1 for one the engine has not (Adasum) or a number that is none of
 * Horovod's (rm_horovod_reduce_op_name tells the two apart). */
int rm_horovod_reduce_op_engine(int value);

typedef struct {
  void* data;
  int64_t count;
  rm_dtype dtype;
} rm_tensor;

/* Per-call options, merged over the job's defaults as tf.distribute does:
 * bytes_per_pack 0, timeout_seconds RM_TIMEOUT_KEEP (any value < 0) and
 * RM_AUTO / RM_ALGORITHM_AUTO mean "keep the default"; a timeout of 0
 * means no deadline. Start from RM_OPTIONS_INIT (or rm_default_options()),
 * which sets `magic` and `size`. Why both: the struct may grow at its end,
 * and the library reads only the fields a caller compiled against (`size`);
 * any other change of its layout takes a new RM_OPTIONS_MAGIC and a new
 * SONAME, so a caller compiled against another layout is refused
 * ("options.magic: ...") instead of misread. Every field is checked where
 * it enters, with RM_INVALID_ARGUMENT naming it ("options.algorithm: ..."). */
#define RM_OPTIONS_MAGIC 0x314f4d52u /* "RMO1" in memory */
typedef struct {
  uint32_t magic; /* RM_OPTIONS_MAGIC */
  uint32_t size;  /* sizeof(rm_options) as the caller compiled it */
  int64_t bytes_per_pack;
  double timeout_seconds;
  rm_implementation implementation;
  rm_algorithm algorithm; /* the CPU engine's all-reduce algorithm */
} rm_options;
#define RM_OPTIONS_INIT \
  { RM_OPTIONS_MAGIC, (uint32_t)sizeof(rm_options), 0, RM_TIMEOUT_KEEP, RM_AUTO, RM_ALGORITHM_AUTO }

/* RM_OPTIONS_INIT as a value. */
rm_options rm_default_options(void);
/* The job's defaults, as the communicator reads them from RINGMASTER_*
 * (what the operator injects): a timeout that is not set is
 * RM_TIMEOUT_KEEP. RM_INVALID_ARGUMENT names a malformed variable. */
int rm_job_options(rm_options* out);

typedef struct rm_communicator rm_communicator;
typedef struct rm_handle rm_handle;

/* Forms the group from TF_CONFIG and RINGMASTER_* (blocks until formed). */
int rm_communicator_create_from_env(rm_communicator** out);
void rm_communicator_destroy(rm_communicator* comm);
int rm_rank(const rm_communicator* comm);
int rm_size(const rm_communicator* comm);
/* "/job:worker/task:1": the task of `rank`; NULL for a bad rank. The string
 * lives as long as the communicator. */
const char* rm_task_name(const rm_communicator* comm, int rank);
/* 0 while the group is usable; else its status code, and rm_last_error()
 * says why (aborted, a member lost, ...). */
int rm_health(const rm_communicator* comm);

/* One communicator per process that framework integrations share (the
 * Python package's and the TensorFlow op's): the Python package sets it when
 * it forms the group; the op finds it here. Not owned: the setter keeps it
 * alive and clears it (NULL) before destroying it. */
void rm_set_default_communicator(rm_communicator* comm);
rm_communicator* rm_default_communicator(void);

/* Process sets (Horovod's; see Communicator::AddProcessSet): a subgroup
 * `ranks` (n of them, any order) of the whole group `comm`, renumbered
 * 0..n-1 in rank order. Collective over the whole group: every member calls
 * it with the same id (> 0) and ranks. Members get the set's communicator in
 * *out (destroy it before `comm`), the others NULL. Every rm_* call takes it
 * like a group's; Abort and health are the whole group's. Host memory only.
 * After rm_reform the set's calls fail (FAILED_PRECONDITION): every member
 * adds its sets again. */
int rm_process_set_add(rm_communicator* comm, int id, const int* ranks, size_t n, rm_communicator** out);
/* 0 for a whole group, else the process set's id (-1 for NULL). */
int rm_process_set_id(const rm_communicator* comm);
/* The process's process sets by id, as rm_set_default_communicator (which
 * is id 0): the Python package registers the sets it adds; the TensorFlow
 * op looks them up. NULL removes; destroying a communicator removes it. */
void rm_set_process_set_communicator(int id, rm_communicator* comm);
rm_communicator* rm_process_set_communicator(int id);

/* The timeline: every collective of this member (its process sets' too),
 * one Chrome trace event per pack, into the JSON file `path` until
 * rm_stop_timeline (Communicator::StartTimeline). */
int rm_start_timeline(rm_communicator* comm, const char* path);
int rm_stop_timeline(rm_communicator* comm);

/* `options` may be NULL. Results are written in place. */
int rm_allreduce(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                 const rm_options* options);
/* Starts the all-reduce and returns at once; rm_handle_wait gives its status
 * and frees the handle. The tensors must stay valid until then. */
int rm_allreduce_async(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                       const rm_options* options, rm_handle** out);
/* Out of place: reads tensor i's input from sources[i] (host memory, the
 * same size; NULL, or a NULL `sources`, = in place) and writes the result to tensors[i].data,
 * which need not hold anything yet. The engine copies on its own threads,
 * overlapping the packs on the wire, so a framework with immutable inputs
 * needs no copy of its own. */
int rm_allreduce_async_from(rm_communicator* comm, const void* const* sources, const rm_tensor* tensors,
                            size_t n, rm_reduce_op op, const rm_options* options, rm_handle** out);
/* GPU memory: the tensors are device buffers that the work queued on
 * `stream` (a cudaStream_t; NULL: the legacy default stream) produces. The
 * engine waits for that work through an event recorded now, reduces on its
 * own stream (NCCL, or staged through the host), and the handle completes
 * once the results are in place, so work queued on `stream` after the
 * handle completes sees them. Host memory is refused (InvalidArgument). */
int rm_allreduce_async_on_stream(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                                 const rm_options* options, void* stream, rm_handle** out);
/* The same, out of place: tensor i's input is read from sources[i] (device
 * memory on the same GPU, the same size; NULL, or a NULL `sources`, = in
 * place), so a framework with immutable inputs needs no copy of its own: a
 * large tensor is reduced from its input straight into its output. */
int rm_allreduce_async_on_stream_from(rm_communicator* comm, const void* const* sources,
                                      const rm_tensor* tensors, size_t n, rm_reduce_op op,
                                      const rm_options* options, void* stream, rm_handle** out);
int rm_handle_wait(rm_handle* handle);
/* Non-zero once every pack of the handle's call is done (rm_handle_wait
 * then returns at once). */
int rm_handle_done(const rm_handle* handle);
/* Called once when a call finishes: its status code and message ("" when
 * OK). It runs on the engine's thread (or on the caller's, inside
 * rm_handle_then, when the call is already done), so it must be short and
 * must not call back into the communicator. */
typedef void (*rm_done_fn)(void* arg, int code, const char* message);
/* Hands the handle's completion to `done` instead of a waiting thread (for
 * frameworks with asynchronous kernels) and frees the handle. Returns 0 when
 * `done` was registered; it is then called exactly once. Note: the
 * deadline fallback of rm_handle_wait (a call queued behind a collective
 * without a timeout) is the engine's alone here. */
int rm_handle_then(rm_handle* handle, rm_done_fn done, void* arg);
int rm_broadcast(rm_communicator* comm, const rm_tensor* tensors, size_t n, int root,
                 const rm_options* options);
int rm_allgather(rm_communicator* comm, const rm_tensor* input, const rm_tensor* output,
                 const rm_options* options);
/* Every member contributes `counts[rank]` elements (input->count must equal
 * it) and receives every member's input concatenated in rank order into
 * `output` (output->count == sum of counts). `counts` has rm_size() entries
 * and must be the same on every member (the caller agrees on them first). */
int rm_allgatherv(rm_communicator* comm, const rm_tensor* input, const int64_t* counts,
                  const rm_tensor* output, const rm_options* options);
/* input is size() consecutive blocks, block r (send_counts[r] elements) going
 * to rank r; output receives the block from rank r at offset sum(recv_counts[0..r)).
 * input->count == sum(send_counts), output->count == sum(recv_counts).
 * send_counts[r] on this member must equal recv_counts[me] on member r. */
int rm_alltoallv(rm_communicator* comm, const rm_tensor* input, const int64_t* send_counts,
                 const rm_tensor* output, const int64_t* recv_counts, const rm_options* options);
/* input (sum of counts elements, the same counts on every member) is
 * reduced element-wise across the group; member r receives block r
 * (counts[r] elements, at offset sum(counts[0..r)) of the reduction) in
 * output (output->count == counts[rank]). RM_MEAN divides by rm_size(). */
int rm_reducescatter(rm_communicator* comm, const rm_tensor* input, const int64_t* counts,
                     const rm_tensor* output, rm_reduce_op op, const rm_options* options);
int rm_barrier(rm_communicator* comm, const rm_options* options);
/* tf.distribute's reduce(op, value, axis); has_axis 0 = no axis. */
int rm_reduce(rm_communicator* comm, rm_reduce_op op, const rm_tensor* value, const int64_t* shape, int ndims,
              int has_axis, int axis, const rm_tensor* output, const rm_options* options);
/* This process alone, no communication: inout[i] = op(inout[i], in[i]) for
 * `count` elements of `dtype`, with the engine's own reduction loops
 * (float16 and bfloat16 through float; RM_MEAN adds, as RM_SUM, and
 * rm_divide_local finishes it). For a caller that gathers its members'
 * values itself and reduces them in rank order: the TensorFlow op's small
 * all-reduce, whose agreement carries the data. */
int rm_reduce_local(rm_dtype dtype, rm_reduce_op op, void* inout, const void* in, int64_t count);
/* data[i] /= n: RM_MEAN's last step (integers truncate, as TensorFlow does). */
int rm_divide_local(rm_dtype dtype, void* data, int64_t count, int64_t n);
void rm_abort(rm_communicator* comm, const char* reason);
int rm_reform(rm_communicator* comm);
/* Recovery in place (Communicator::AgreeOnResume): every member offers the
 * last step it committed (-1: it holds no state) and receives the agreed
 * step and the rank to broadcast the state from. */
int rm_agree_on_resume(rm_communicator* comm, int64_t committed_step, int64_t* step, int* root);
/* Elastic size (Communicator::AgreeOnJoiners): how many members wait to
 * join, the same on every member; not 0: every member calls rm_reform. */
int rm_agree_on_joiners(rm_communicator* comm, int* joiners);

/* The message of the calling thread's last failed call ("" if none). */
const char* rm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RINGMASTER_RINGMASTER_H_ */
