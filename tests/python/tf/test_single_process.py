"""ringmaster.tensorflow in one process (a group of one), in a subprocess
because the group is process-wide: errors before init(), structures, the
control-dependency chain in a tf.function, IndexedSlices, XLA."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from group import base_env, free_ports

SCRIPT = textwrap.dedent('''
    import json, warnings
    import tensorflow as tf
    import ringmaster.tensorflow as rm
    out = {}
    try:
        rm.all_reduce("sum", tf.constant([1.0]))
    except tf.errors.FailedPreconditionError as e:
        out["before_init"] = str(e)
    rm.init()
    out["ranks"] = [rm.rank(), rm.size(), rm.local_rank(), rm.local_size()]
    res = rm.all_reduce("mean", {"a": tf.constant([1, 2]), "b": [tf.constant(3.0), None]})
    out["structure"] = [res["a"].numpy().tolist(), float(res["b"][0]), res["b"][1]]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([1]), tf.constant([3, 2]))
        dense = rm.all_reduce("sum", [s])
        rm.all_reduce("sum", [s])
        out["sparse"] = [dense[0].numpy().tolist(), len([x for x in w if "IndexedSlices" in str(x.message)])]
    try:
        tf.function(lambda x: rm.all_reduce("sum", x), jit_compile=True)(tf.constant([1.0]))
        out["xla"] = "ran"
    except ValueError as e:
        out["xla"] = str(e)
    g = tf.function(lambda x: [rm.all_reduce("sum", x), rm.all_reduce("sum", x * 2), rm.broadcast(x, 0)])
    graph = g.get_concrete_function(tf.constant([1.0])).graph
    ops = [op for op in graph.get_operations() if op.type.startswith("Ringmaster")]
    out["chain"] = [[op.name, [c.name for c in op.control_inputs]] for op in ops]
    out["options"] = str(rm.communication_options())
    # The engine's algorithm, per call, through the op's attributes (the C API's names).
    import ringmaster
    hd = ringmaster.CommunicationOptions(algorithm="hd")
    out["algo"] = rm.all_reduce("sum", tf.constant([2.0]), options=hd).numpy().tolist()
    g2 = tf.function(lambda x: rm.all_reduce("sum", x, options=ringmaster.CommunicationOptions(algorithm="rd")))
    graph2 = g2.get_concrete_function(tf.constant([1.0])).graph
    out["algo_attr"] = [op.get_attr("algorithm") for op in graph2.get_operations() if op.type.startswith("Ringmaster")]
    try:
        rm.all_reduce("sum", tf.constant([2.0]), options=ringmaster.CommunicationOptions(algorithm="tree"))
    except ringmaster.InvalidArgumentError as e:
        out["algo_bad"] = str(e)
    import keras
    import numpy as np
    import ringmaster.tensorflow.keras as rmk
    x, y = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    def model_with(callbacks):
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        m.compile(optimizer=rmk.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse", jit_compile=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                m.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=callbacks)
                return ["trained", [str(i.message) for i in w if "ringmaster" in str(i.message)]]
            except ValueError as e:
                return ["error", str(e)]
    out["fit_xla_plain"] = model_with([])
    out["fit_xla_callback"] = model_with([rmk.callbacks.BroadcastGlobalVariablesCallback(0)])
    print(json.dumps(out))
''')


def test_single_process_api(op_library):
    port = free_ports(1)[0]
    env = base_env({"TF_CONFIG": json.dumps({"cluster": {"chief": [f"127.0.0.1:{port}"]},
                                             "task": {"type": "chief", "index": 0}}),
                    "RINGMASTER_BYTES_PER_PACK": "4096", "RINGMASTER_IMPLEMENTATION": "RING",
                    "RINGMASTER_TIMEOUT_SECONDS": "30"})
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert "call ringmaster.tensorflow.init() first" in out["before_init"], out
    assert out["ranks"] == [0, 1, 0, 1]
    assert out["structure"] == [[1, 2], 3.0, None]
    assert out["sparse"] == [[[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]], 1]
    assert "jit_compile=False" in out["xla"], out["xla"]
    names = [n for n, _ in out["chain"]]
    assert len(names) == 3 and out["chain"][0][1] == [], out["chain"]
    assert out["chain"][1][1] == [names[0]] and out["chain"][2][1] == [names[1]], out["chain"]
    # Keras 3 with jit_compile=True: a clear error; with the broadcast callback, trained without XLA.
    assert out["fit_xla_plain"][0] == "error" and "jit_compile=False" in out["fit_xla_plain"][1], out
    assert out["fit_xla_callback"][0] == "trained" and len(out["fit_xla_callback"][1]) == 1, out
    assert out["algo"] == [2.0], out
    assert out["algo_attr"] == [2], out  # recursive_doubling
    assert out["algo_bad"].startswith("algorithm: unknown algorithm 'tree'"), out
    assert "bytes_per_pack=4096" in out["options"] and "timeout_seconds=30.0" in out["options"] \
        and "RING" in out["options"], out["options"]


LAUNCHERLESS = textwrap.dedent('''
    import json, os
    import tensorflow as tf
    import ringmaster.tensorflow as hvd
    hvd.init()
    def is_socket(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except FileNotFoundError:  # listdir's own descriptor, closed since
            return False
    sockets = [f for f in os.listdir("/proc/self/fd") if is_socket(f)]
    out = {"ranks": [hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), hvd.cross_size()],
           "sum": hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum).numpy().tolist(),
           "tf_config": os.environ.get("TF_CONFIG"), "sockets": len(sockets)}
    hvd.init()  # again: the same group
    out["again"] = hvd.size()
    print(json.dumps(out))
''')


def test_init_without_a_launcher_is_a_group_of_one(op_library):
    """Horovod's init() run without a launcher (python train.py) gives a
    group of one; so does ours without TF_CONFIG, and leaves no TF_CONFIG
    behind for TensorFlow to read."""
    p = subprocess.run([sys.executable, "-c", LAUNCHERLESS], env=base_env(), capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["ranks"] == [0, 1, 0, 1, 1], out
    assert out["sum"] == [1.0, 2.0], out
    assert out["tf_config"] is None, out
    assert out["sockets"] == 0, out
    assert out["again"] == 1, out
