"""One task of a coexistence scenario (test_coexist.py): TensorFlow and
Ringmaster's agent in one process, in either import order, with
MultiWorkerMirroredStrategy's own server beside the agent.

Prints `RESULT {json}` on success; any failure is an exception (exit 1) or
a crash (a signal), which is what the loading order used to cause.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
scenario = sys.argv[1]
rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]


def ours(comm):
    import numpy as np
    x = np.full(1000, rank + 1, dtype=np.float32)
    out = comm.all_reduce(x)
    assert out is x, "all_reduce must work in place on a NumPy array"
    return float(x[0])


def grpc_echo():
    """grpcio (a third copy of gRPC, its own) serving and calling in this process."""
    from concurrent import futures

    import grpc
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.Echo", {"Say": echo}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        said = channel.unary_unary("/t.Echo/Say")(b"ping", timeout=30)
    server.stop(None)
    return said.decode()


def through_the_op(tf):
    """The same group through the TensorFlow op library (ringmaster.tensorflow)."""
    import ringmaster.tensorflow as hvd
    hvd.init()  # the group ringmaster.init() formed
    return float(hvd.allreduce(tf.fill([8], float(rank + 1)), op=hvd.Sum)[0])


if scenario == "tf_first":
    import tensorflow as tf
    tf.constant(1.0) + 1.0  # TensorFlow's runtime (and its gRPC) is up
    said = grpc_echo()
    import ringmaster
    comm = ringmaster.init()
    got = ours(comm)
    op = through_the_op(tf)
    print("RESULT " + json.dumps({"ours": got, "op": op, "grpc": said, "grpc_after": grpc_echo(),
                                  "tf": float(tf.reduce_sum(tf.ones([4])))}), flush=True)

elif scenario == "ringmaster_first":
    import ringmaster
    comm = ringmaster.init()
    got = ours(comm)
    said = grpc_echo()
    import tensorflow as tf
    op = through_the_op(tf)
    print("RESULT " + json.dumps({"ours": got, "op": op, "grpc": said, "grpc_after": grpc_echo(),
                                  "tf": float(tf.reduce_sum(tf.ones([4])))}), flush=True)

elif scenario in ("mwms", "port_taken"):
    import tensorflow as tf
    # TensorFlow's own server takes this task's TF_CONFIG port.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    import ringmaster
    if scenario == "port_taken":
        try:
            ringmaster.init()
        except ringmaster.UnavailableError as e:
            print("RESULT " + json.dumps({"error": str(e)}), flush=True)
            sys.exit(0)
        raise AssertionError("the agent started on a port TensorFlow's server holds")
    comm = ringmaster.init()  # no RINGMASTER_PORT: the default beside TF's server
    got = ours(comm)

    @tf.function
    def step():
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("sum", tf.fill([4], float(rank + 1)))

    theirs = strategy.experimental_local_results(strategy.run(step))[0]
    got_again = ours(comm)  # and ours again, after TensorFlow's collective
    print("RESULT " + json.dumps({"ours": got, "tf": float(theirs[0]), "ours_again": got_again}), flush=True)
else:
    raise SystemExit(f"unknown scenario {scenario}")
