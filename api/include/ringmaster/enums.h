/* Every enum of the collective API and of the job model, written once.
 * Each table lists, per value, its C enumerator, its C++ enumerator, its
 * number (part of the ABI: never renumber) and its name; the aliases
 * tables list the other spellings that parsers accept. The C header
 * (ringmaster.h) declares its enums from these tables, the C++ headers
 * theirs, the name and parse functions walk them (ringmaster/enum_names.h,
 * rm_*_name and rm_parse_* in ringmaster.h), and the Python package and the
 * TensorFlow op read them through those functions: no other list of dtypes,
 * reduce ops, implementations, algorithms, collectives, Horovod's reduce
 * ops, replica types, restart, clean-pod or recovery policies, or job
 * condition types exists. Plain C (no includes), so C programs can read it
 * too. */
#ifndef RINGMASTER_ENUMS_H_
#define RINGMASTER_ENUMS_H_

/* Element types. bool moves (broadcast, gathers) but is never reduced. */
#define RM_DTYPE_TABLE(X)                  \
  X(RM_FLOAT16, kFloat16, 0, "float16")    \
  X(RM_BFLOAT16, kBFloat16, 1, "bfloat16") \
  X(RM_FLOAT32, kFloat32, 2, "float32")    \
  X(RM_FLOAT64, kFloat64, 3, "float64")    \
  X(RM_INT32, kInt32, 4, "int32")          \
  X(RM_INT64, kInt64, 5, "int64")          \
  X(RM_UINT8, kUInt8, 6, "uint8")          \
  X(RM_INT8, kInt8, 7, "int8")             \
  X(RM_UINT16, kUInt16, 8, "uint16")       \
  X(RM_INT16, kInt16, 9, "int16")          \
  X(RM_BOOL, kBool, 10, "bool")
#define RM_DTYPE_ALIASES(X)

/* Reductions. MEAN divides the sum by the group's size. */
#define RM_REDUCE_OP_TABLE(X)  \
  X(RM_SUM, kSum, 0, "sum")    \
  X(RM_MEAN, kMean, 1, "mean") \
  X(RM_MIN, kMin, 2, "min")    \
  X(RM_MAX, kMax, 3, "max")    \
  X(RM_PRODUCT, kProduct, 4, "product")
/* NumPy's "prod", Horovod's "average". */
#define RM_REDUCE_OP_ALIASES(X) X("prod", RM_PRODUCT) X("average", RM_MEAN) X("avg", RM_MEAN)

/* tf.distribute.experimental.CommunicationImplementation: a hint. */
#define RM_IMPLEMENTATION_TABLE(X) \
  X(RM_AUTO, kAuto, 0, "AUTO")     \
  X(RM_RING, kRing, 1, "RING")     \
  X(RM_NCCL, kNccl, 2, "NCCL")
#define RM_IMPLEMENTATION_ALIASES(X)

/* The CPU engine's all-reduce algorithm (as NCCL_ALGO is NCCL's): auto
 * picks by message size and the measured links. */
#define RM_ALGORITHM_TABLE(X)                                                     \
  X(RM_ALGORITHM_AUTO, kAuto, 0, "auto")                                          \
  X(RM_ALGORITHM_RING, kRing, 1, "ring")                                          \
  X(RM_ALGORITHM_RECURSIVE_DOUBLING, kRecursiveDoubling, 2, "recursive_doubling") \
  X(RM_ALGORITHM_HALVING_DOUBLING, kHalvingDoubling, 3, "halving_doubling")
/* The benchmarks' short names. */
#define RM_ALGORITHM_ALIASES(X) \
  X("rd", RM_ALGORITHM_RECURSIVE_DOUBLING) X("hd", RM_ALGORITHM_HALVING_DOUBLING)

/* The collectives, as the flight recorder, the timeline and the diagnosis
 * name them, and as the TensorFlow op's agreement numbers them. The values
 * travel between members in both: append only. gpu-all-reduce is an
 * all-reduce of GPU memory; join is Horovod's, the TensorFlow op's alone. */
#define RM_COLLECTIVE_TABLE(X)                                         \
  X(RM_COLLECTIVE_ALL_REDUCE, kAllReduce, 0, "all-reduce")             \
  X(RM_COLLECTIVE_BROADCAST, kBroadcast, 1, "broadcast")               \
  X(RM_COLLECTIVE_ALL_GATHER, kAllGather, 2, "all-gather")             \
  X(RM_COLLECTIVE_BARRIER, kBarrier, 3, "barrier")                     \
  X(RM_COLLECTIVE_GPU_ALL_REDUCE, kGpuAllReduce, 4, "gpu-all-reduce")  \
  X(RM_COLLECTIVE_ALL_TO_ALL, kAllToAll, 5, "all-to-all")              \
  X(RM_COLLECTIVE_REDUCE_SCATTER, kReduceScatter, 6, "reduce-scatter") \
  X(RM_COLLECTIVE_JOIN, kJoin, 7, "join")
#define RM_COLLECTIVE_ALIASES(X)

/* Horovod's reduce ops with Horovod's numbers, which its users pass around
 * as plain integers (Horovod's C library exports them as
 * horovod_reduce_op_average() and so on; ours as rm_horovod_reduce_op_name
 * and rm_horovod_reduce_op_engine). Its own shape: X(NAME, VALUE, the
 * engine's reduce op by name, or "" for none). */
#define RM_HOROVOD_REDUCE_OP_TABLE(X) \
  X("Average", 0, "mean")             \
  X("Sum", 1, "sum")                  \
  X("Adasum", 2, "")                  \
  X("Min", 3, "min")                  \
  X("Max", 4, "max")                  \
  X("Product", 5, "product")

/* The job model's enums (ringmaster/job.h, ringmaster/job_state.h): the
 * names a DistributedJob spells (the CRD's enums, exact case) and the
 * condition types its status carries. Not in the C API: their numbers are
 * their C++ declaration order, which is the order they are listed in
 * (replica types: the collective group's order, chief first). */
#define RM_REPLICA_TYPE_TABLE(X)                  \
  X(RM_REPLICA_TYPE_CHIEF, kChief, 0, "Chief")    \
  X(RM_REPLICA_TYPE_WORKER, kWorker, 1, "Worker") \
  X(RM_REPLICA_TYPE_PS, kPS, 2, "PS")             \
  X(RM_REPLICA_TYPE_EVALUATOR, kEvaluator, 3, "Evaluator")
/* TFJob's old name for Chief. */
#define RM_REPLICA_TYPE_ALIASES(X) X("Master", RM_REPLICA_TYPE_CHIEF)

#define RM_RESTART_POLICY_TABLE(X)                            \
  X(RM_RESTART_POLICY_NEVER, kNever, 0, "Never")              \
  X(RM_RESTART_POLICY_ON_FAILURE, kOnFailure, 1, "OnFailure") \
  X(RM_RESTART_POLICY_ALWAYS, kAlways, 2, "Always")           \
  X(RM_RESTART_POLICY_EXIT_CODE, kExitCode, 3, "ExitCode")
#define RM_RESTART_POLICY_ALIASES(X)

#define RM_CLEAN_POD_POLICY_TABLE(X)                     \
  X(RM_CLEAN_POD_POLICY_ALL, kAll, 0, "All")             \
  X(RM_CLEAN_POD_POLICY_RUNNING, kRunning, 1, "Running") \
  X(RM_CLEAN_POD_POLICY_NONE, kNone, 2, "None")
#define RM_CLEAN_POD_POLICY_ALIASES(X)

#define RM_RECOVERY_POLICY_TABLE(X)         \
  X(RM_RECOVERY_POLICY_JOB, kJob, 0, "Job") \
  X(RM_RECOVERY_POLICY_IN_PLACE, kInPlace, 1, "InPlace")
#define RM_RECOVERY_POLICY_ALIASES(X)

#define RM_CONDITION_TYPE_TABLE(X)                              \
  X(RM_CONDITION_TYPE_CREATED, kCreated, 0, "Created")          \
  X(RM_CONDITION_TYPE_QUEUED, kQueued, 1, "Queued")             \
  X(RM_CONDITION_TYPE_RUNNING, kRunning, 2, "Running")          \
  X(RM_CONDITION_TYPE_RESTARTING, kRestarting, 3, "Restarting") \
  X(RM_CONDITION_TYPE_SUCCEEDED, kSucceeded, 4, "Succeeded")    \
  X(RM_CONDITION_TYPE_FAILED, kFailed, 5, "Failed")             \
  X(RM_CONDITION_TYPE_SUSPENDED, kSuspended, 6, "Suspended")    \
  X(RM_CONDITION_TYPE_RECOVERING, kRecovering, 7, "Recovering")
#define RM_CONDITION_TYPE_ALIASES(X)

/* Helpers to expand a table. */
#define RM_ENUM_C_ENUMERATOR(c_name, cxx_name, value, name) c_name = value,
#define RM_ENUM_CXX_ENUMERATOR(c_name, cxx_name, value, name) cxx_name = value,
#define RM_ENUM_COUNT_ONE(c_name, cxx_name, value, name) +1

/* A per-call timeout that keeps the job's default (TensorFlow's None): the
 * one encoding of "not set" for rm_options.timeout_seconds and the
 * TensorFlow op's timeout_seconds attribute. */
#define RM_TIMEOUT_KEEP (-1.0)

#endif /* RINGMASTER_ENUMS_H_ */
