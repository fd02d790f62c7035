"""ringmaster.tensorflow as horovod.tensorflow: every member runs this file
(launch.py -n N -- python -m pytest ...), as Horovod runs its own tests.

Each rank's inputs are a function of its rank, so every rank computes what
every other rank sent and checks the collective's result against NumPy.
Collectives run eagerly and inside tf.function (the `mode` fixture)."""
from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

import ringmaster.tensorflow as hvd
from ringmaster import FailedPreconditionError

hvd.init()
R, N = hvd.rank(), hvd.size()

INTS = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64]
FLOATS = [tf.float16, tf.bfloat16, tf.float32, tf.float64]


@pytest.fixture(params=["eager", "function"])
def run(request):
    """Calls f() eagerly, or traced once into a tf.function."""
    if request.param == "eager":
        return lambda f: tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, f())
    return lambda f: tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, tf.function(f)())


def value_of(r: int, dtype: tf.DType, shape=(3, 4)) -> np.ndarray:
    """Rank r's input: small values (no overflow in any dtype's product of 3)."""
    base = np.arange(int(np.prod(shape))).reshape(shape) % 5 + r + 1
    return base.astype(dtype.as_numpy_dtype)


def all_values(dtype: tf.DType, shape=(3, 4)) -> np.ndarray:
    return np.stack([value_of(r, dtype, shape).astype(np.float64) for r in range(N)])


# ------------------------------------------------------------------ basics


def test_rank_and_size_match_the_launcher():
    assert R == int(os.environ["HOROVOD_RANK"])
    assert N == int(os.environ["HOROVOD_SIZE"])
    assert hvd.is_initialized()
    # ringmaster run: every member on 127.0.0.1, so local = global, one host.
    assert (hvd.local_rank(), hvd.local_size()) == (R, N)
    assert (hvd.cross_rank(), hvd.cross_size()) == (0, 1)
    assert hvd.is_homogeneous()
    assert int(hvd.rank_op()) == R and int(hvd.size_op()) == N
    assert int(hvd.local_rank_op()) == R and int(hvd.local_size_op()) == N
    assert int(hvd.process_set_included_op()) == 1


def test_capabilities_are_truthful():
    for q in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built, hvd.gloo_enabled, hvd.ccl_built, hvd.ddl_built,
              hvd.rocm_built, hvd.mpi_threads_supported):
        assert q() is False, q.__name__


def test_cuda_and_nccl_built_follow_tensorflow():
    # The op's GPU kernel is in every build; it runs where TensorFlow has CUDA.
    assert hvd.cuda_built() is tf.test.is_built_with_cuda()
    assert hvd.nccl_built() == 0 or (hvd.cuda_built() and hvd.nccl_built() >= 21400)  # a version code


def test_reduce_op_constants_are_horovods():
    assert (hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product) == (0, 1, 2, 3, 4, 5)


# ------------------------------------------------------------- allreduce


@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["Sum", "Average", "Min", "Max", "Product"])
def test_allreduce(run, dtype, op):
    x = tf.constant(value_of(R, dtype))
    got = run(lambda: hvd.allreduce(x, op=getattr(hvd, op))).astype(np.float64)
    if dtype.is_integer:  # in int64, then wrapped to the dtype; Average truncates, as Horovod's
        ints = np.stack([value_of(r, dtype).astype(np.int64) for r in range(N)])
        want = {"Sum": ints.sum(0), "Average": ints.sum(0) // N, "Min": ints.min(0), "Max": ints.max(0),
                "Product": ints.prod(0)}[op]
        np.testing.assert_array_equal(got, want.astype(dtype.as_numpy_dtype).astype(np.float64))
        return
    vals = all_values(dtype)
    want = {"Sum": vals.sum(0), "Average": vals.sum(0) / N, "Min": vals.min(0), "Max": vals.max(0),
            "Product": vals.prod(0)}[op]
    np.testing.assert_allclose(got, want, rtol=2e-2 if dtype in (tf.float16, tf.bfloat16) else 1e-6)


def test_allreduce_average_is_the_default_and_average_flag_is_deprecated():
    x = tf.constant(value_of(R, tf.float32))
    np.testing.assert_allclose(hvd.allreduce(x).numpy(), all_values(tf.float32).mean(0), rtol=1e-6)
    np.testing.assert_allclose(hvd.allreduce(x, average=False).numpy(), all_values(tf.float32).sum(0))
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(x, op=hvd.Sum, average=True)


@pytest.mark.parametrize("dtype", [tf.uint8, tf.int32, tf.float16, tf.float32], ids=lambda d: d.name)
def test_allreduce_prescale_and_postscale(run, dtype):
    x = tf.constant(value_of(R, dtype))
    pre, post = 0.5, 3.0
    got = run(lambda: hvd.allreduce(x, op=hvd.Sum, prescale_factor=pre, postscale_factor=post))
    wide = np.float32 if dtype in (tf.float16, tf.float32) else np.float64
    scaled = [(value_of(r, dtype).astype(wide) * wide(pre)).astype(dtype.as_numpy_dtype) for r in range(N)]
    summed = np.sum(np.stack(scaled).astype(np.float64), 0).astype(dtype.as_numpy_dtype)
    want = (summed.astype(wide) * wide(post)).astype(dtype.as_numpy_dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)


def test_grouped_allreduce_mixed_dtypes_in_one_op(run):
    xs = [tf.constant(value_of(R, d)) for d in (tf.float32, tf.int64, tf.float64)]
    got = run(lambda: hvd.grouped_allreduce(xs, op=hvd.Sum))
    for g, d in zip(got, (tf.float32, tf.int64, tf.float64)):
        np.testing.assert_allclose(g.astype(np.float64), all_values(d).sum(0))


def test_allreduce_of_indexed_slices_gathers_values_and_indices():
    x = tf.IndexedSlices(tf.constant(value_of(R, tf.float32, (2, 4))), tf.constant([R, R + 1], tf.int64),
                         dense_shape=tf.constant([N + 1, 4], tf.int64))
    summed = hvd.allreduce(x, op=hvd.Sum)
    assert isinstance(summed, tf.IndexedSlices)
    assert summed.values.shape == (2 * N, 4)
    dense = tf.convert_to_tensor(summed).numpy()
    want = np.zeros((N + 1, 4))
    for r in range(N):
        want[[r, r + 1]] += value_of(r, tf.float32, (2, 4))
    np.testing.assert_allclose(dense, want)
    averaged = tf.convert_to_tensor(hvd.allreduce(x, op=hvd.Average)).numpy()
    np.testing.assert_allclose(averaged, want / N, rtol=1e-6)
    with pytest.raises(NotImplementedError):
        hvd.allreduce(x, op=hvd.Min)
    with pytest.raises(NotImplementedError):
        hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0)


def test_adasum_is_named_as_not_implemented():
    with pytest.raises(NotImplementedError, match="Adasum"):
        hvd.allreduce(tf.ones([2]), op=hvd.Adasum)


def test_fp16_compression_round_trips_the_dtype():
    x = tf.constant(value_of(R, tf.float32))
    got = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), all_values(tf.float32).sum(0), rtol=1e-3)


# -------------------------------------------------------------- allgather


@pytest.mark.parametrize("dtype", INTS + FLOATS + [tf.bool], ids=lambda d: d.name)
def test_allgather_with_a_first_dimension_per_rank(run, dtype):
    x = tf.constant(value_of(R, dtype, (R + 1, 3)) if dtype != tf.bool else np.full((R + 1, 3), R % 2 == 0))
    got = run(lambda: hvd.allgather(x))
    if dtype == tf.bool:
        want = np.concatenate([np.full((r + 1, 3), r % 2 == 0) for r in range(N)])
    else:
        want = np.concatenate([value_of(r, dtype, (r + 1, 3)) for r in range(N)])
    np.testing.assert_array_equal(got, want)


def test_grouped_allgather(run):
    xs = [tf.fill([R + 1], float(R)), tf.fill([2, 2], R)]
    got = run(lambda: hvd.grouped_allgather(xs))
    np.testing.assert_array_equal(got[0], np.concatenate([np.full(r + 1, float(r)) for r in range(N)]))
    np.testing.assert_array_equal(got[1], np.concatenate([np.full((2, 2), r) for r in range(N)]))


# -------------------------------------------------------------- broadcast


@pytest.mark.parametrize("dtype", INTS + FLOATS + [tf.bool], ids=lambda d: d.name)
@pytest.mark.parametrize("root", [0, -1])
def test_broadcast(run, dtype, root):
    root = root % N
    mine = value_of(R, dtype) if dtype != tf.bool else np.full((3, 4), R == root)
    got = run(lambda: hvd.broadcast(tf.constant(mine), root))
    want = value_of(root, dtype) if dtype != tf.bool else np.full((3, 4), True)
    np.testing.assert_array_equal(got, want)


def test_broadcast_in_place_and_broadcast_variables():
    vs = [tf.Variable(value_of(R, tf.float32)), tf.Variable(value_of(R, tf.int64, (2,)))]
    hvd.broadcast_(vs, root_rank=N - 1)
    np.testing.assert_array_equal(vs[0].numpy(), value_of(N - 1, tf.float32))
    np.testing.assert_array_equal(vs[1].numpy(), value_of(N - 1, tf.int64, (2,)))
    ws = [tf.Variable(value_of(R, tf.float64))]
    hvd.broadcast_variables(ws, root_rank=0)
    np.testing.assert_array_equal(ws[0].numpy(), value_of(0, tf.float64))


def test_broadcast_global_variables_refuses_eager_mode():
    with pytest.raises(RuntimeError):
        hvd.broadcast_global_variables(0)


def test_objects():
    obj = {"rank": R, "payload": list(range(R + 2))}
    assert hvd.broadcast_object(obj, root_rank=N - 1) == {"rank": N - 1, "payload": list(range(N + 1))}
    assert hvd.broadcast_object_fn(root_rank=0)(obj)["rank"] == 0
    assert hvd.allgather_object(obj) == [{"rank": r, "payload": list(range(r + 2))} for r in range(N)]


# --------------------------------------------------- alltoall, reducescatter


def test_alltoall_with_splits(run):
    # Rank r sends (dest + 1) rows to each dest, each row filled with 100 * r + dest.
    splits = [d + 1 for d in range(N)]
    rows = np.concatenate([np.full((d + 1, 2), 100 * R + d) for d in range(N)]).astype(np.float32)
    out, received = run(lambda: hvd.alltoall(tf.constant(rows), splits=tf.constant(splits)))
    want = np.concatenate([np.full((R + 1, 2), 100 * r + R) for r in range(N)])
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(received, [R + 1] * N)


def test_alltoall_equal_split_and_its_error():
    x = tf.constant(np.arange(2 * N, dtype=np.int32) + 10 * R)
    got = hvd.alltoall(x).numpy()
    want = np.concatenate([np.arange(2 * R, 2 * R + 2) + 10 * r for r in range(N)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of the group size"):
        hvd.alltoall(tf.ones([N + 1]))


@pytest.mark.parametrize("rows", [lambda n: 2 * n, lambda n: 2 * n + n // 2 + 1], ids=["even", "uneven"])
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_reducescatter(run, rows, op):
    d0 = rows(N)
    x = tf.constant(value_of(R, tf.float32, (d0, 3)))
    got = run(lambda: hvd.reducescatter(x, op=getattr(hvd, op)))
    total = all_values(tf.float32, (d0, 3)).sum(0) / (N if op == "Average" else 1)
    sizes = [d0 // N + (1 if r < d0 % N else 0) for r in range(N)]
    start = sum(sizes[:R])
    np.testing.assert_allclose(got, total[start:start + sizes[R]], rtol=1e-6)


def test_grouped_reducescatter_and_scalar_error():
    xs = [tf.ones([N, 2]), tf.fill([2 * N], 2.0)]
    got = hvd.grouped_reducescatter(xs, op=hvd.Sum)
    np.testing.assert_array_equal(got[0].numpy(), np.full((1, 2), N))
    np.testing.assert_array_equal(got[1].numpy(), np.full((2,), 2.0 * N))
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        hvd.reducescatter(tf.constant(1.0))


# -------------------------------------------------------------- gradients


def test_gradients_of_every_collective():
    x = tf.Variable(value_of(R, tf.float32, (N, 2)))
    with tf.GradientTape(persistent=True) as tape:
        s = hvd.allreduce(x, op=hvd.Sum)
        g = hvd.allgather(x)
        b = hvd.broadcast(x, 0)
        a = hvd.alltoall(x)
        rs = hvd.reducescatter(x, op=hvd.Sum)
        losses = [tf.reduce_sum(s), tf.reduce_sum(g), tf.reduce_sum(b), tf.reduce_sum(a), tf.reduce_sum(rs)]
    ones = np.ones((N, 2))
    # allreduce(Sum): the all-reduce of the upstream ones.
    np.testing.assert_allclose(tape.gradient(losses[0], x).numpy(), N * ones)
    # allgather: this rank's slice of the averaged upstream gradient.
    np.testing.assert_allclose(tape.gradient(losses[1], x).numpy(), ones)
    # broadcast: the averaged gradient on the root, zero elsewhere.
    np.testing.assert_allclose(tape.gradient(losses[2], x).numpy(), ones if R == 0 else 0 * ones)
    # alltoall: the rows go back where they came from.
    np.testing.assert_allclose(tape.gradient(losses[3], x).numpy(), ones)
    # reducescatter(Sum): every share gathered back, times the size.
    np.testing.assert_allclose(tape.gradient(losses[4], x).numpy(), N * ones)


def test_distributed_gradient_tape_averages_and_keeps_local_sources():
    w = tf.Variable([1.0, 2.0])
    local = tf.Variable([3.0])
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(w * float(R + 1)) + tf.reduce_sum(local * float(R + 1))
    tape = hvd.DistributedGradientTape(t)
    tape.register_local_source(local)
    gw, gl = tape.gradient(loss, [w, local])
    mean = np.mean([r + 1 for r in range(N)])
    np.testing.assert_allclose(gw.numpy(), [mean, mean])
    np.testing.assert_allclose(gl.numpy(), [(R + 1.0) / N])  # scale_local_gradients: divided by the size
    with tf.GradientTape() as t2:
        loss = tf.reduce_sum(w * float(R + 1))
    summed = hvd.DistributedGradientTape(t2, op=hvd.Sum).gradient(loss, [w])[0]
    np.testing.assert_allclose(summed.numpy(), [sum(r + 1 for r in range(N))] * 2)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedGradientTape(t2, op=hvd.Sum, gradient_predivide_factor=2.0)


def test_gradient_predivide_factor_still_averages():
    w = tf.Variable([1.0])
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(w * float(R + 1))
    g = hvd.DistributedGradientTape(t, gradient_predivide_factor=4.0).gradient(loss, [w])[0]
    np.testing.assert_allclose(g.numpy(), [np.mean([r + 1 for r in range(N)])], rtol=1e-6)


# ----------------------------------------------------------------- errors


def test_mismatched_shapes_fail_on_every_rank_and_the_group_goes_on():
    x = tf.ones([17, 17 + R])
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"rank 0 .*float\[17,17\]"):
        hvd.allreduce(x)
    # The group is still usable.
    np.testing.assert_allclose(hvd.allreduce(tf.ones([2]), op=hvd.Sum).numpy(), [N, N])


def test_small_allreduces_that_disagree_fail_on_every_rank_and_the_group_goes_on(run):
    """Small all-reduces send their data with the agreement's record: a
    mismatch still fails every member, naming the ranks and both shapes,
    whether the byte counts differ, are equal, or one side is not small."""
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"rank 0 .*float\[2\].*rank 1 .*float\[3\]"):
        run(lambda: hvd.allreduce(tf.ones([2 + R]), op=hvd.Sum))
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"mismatched shapes.*float\[2,3\].*float\[3,2\]"):
        run(lambda: hvd.allreduce(tf.ones([2, 3] if R == 0 else [3, 2]), op=hvd.Sum))
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"mismatched shapes.*float\[1\].*float\[64,64\]"):
        run(lambda: hvd.allreduce(tf.ones([1] if R == 0 else [64, 64]), op=hvd.Sum))
    with pytest.raises(tf.errors.FailedPreconditionError, match="reduce ops"):
        run(lambda: hvd.allreduce(tf.ones([2]), op=hvd.Sum if R == 0 else hvd.Max))
    np.testing.assert_allclose(run(lambda: hvd.allreduce(tf.ones([2]), op=hvd.Sum)), [N, N])


def test_mismatched_dtypes_fail_on_every_rank():
    x = tf.ones([3], dtype=tf.float32 if R == 0 else tf.int32)
    with pytest.raises(tf.errors.FailedPreconditionError, match="mismatched data types"):
        hvd.allreduce(x)
    with pytest.raises(tf.errors.FailedPreconditionError):
        hvd.allgather(tf.ones([1, 2], dtype=tf.float32 if R == 0 else tf.float64))


def test_mismatched_roots_and_collectives_fail_on_every_rank():
    with pytest.raises(tf.errors.FailedPreconditionError, match="root ranks"):
        hvd.broadcast(tf.ones([3]), R)
    with pytest.raises(tf.errors.FailedPreconditionError, match="different collectives"):
        if R == 0:
            hvd.broadcast(tf.ones([3]), 0)
        else:
            hvd.allreduce(tf.ones([3]))
    with pytest.raises(tf.errors.FailedPreconditionError):
        hvd.allgather(tf.ones([2, 3 + R]))  # dimensions beyond the first must agree


def test_one_rank_with_bad_arguments_fails_every_rank():
    root = N if R == 0 else 0  # out of range on rank 0 only
    if R == 0:
        with pytest.raises(tf.errors.InvalidArgumentError, match="root_rank"):
            hvd.broadcast(tf.ones([2]), root)
    else:
        with pytest.raises(tf.errors.FailedPreconditionError, match="rank 0"):
            hvd.broadcast(tf.ones([2]), root)


def test_join_and_barrier():
    assert int(hvd.join()) == N - 1  # every rank joins in the same round: the highest is "last"
    hvd.barrier()


@pytest.mark.parametrize("first", [0, N - 1])
@pytest.mark.parametrize("dtype", [tf.int32, tf.float16, tf.float32, tf.float64])
def test_joined_rank_stands_in_with_zeros(run, first, dtype):
    """Horovod's join: the rank that ran out of data contributes zeros to the
    others' allreduces (the average still divides by N) until they join too;
    join() returns the rank that joined last, on every rank."""
    def f():
        if R == first:
            return {"last": hvd.join()}
        x = tf.constant(value_of(R, dtype))
        out = {"sum": hvd.allreduce(x, op=hvd.Sum),
               "grouped": hvd.grouped_allreduce([x, tf.reshape(x, [-1])[:5]], op=hvd.Sum)}
        if dtype.is_floating:
            out["avg"] = hvd.allreduce(x, op=hvd.Average)
        with tf.control_dependencies(tf.nest.flatten(out)):
            out["last"] = hvd.join()
        return out

    got = run(f)
    others = sum(value_of(r, dtype).astype(np.float64) for r in range(N) if r != first)
    if R != first:
        np.testing.assert_array_equal(got["sum"].astype(np.float64), others)
        np.testing.assert_array_equal(got["grouped"][1].astype(np.float64), others.reshape(-1)[:5])
        if dtype.is_floating:
            np.testing.assert_allclose(got["avg"].astype(np.float64), others / N, rtol=1e-2)
    # The first to join never joined last; the others joined in the same round.
    assert int(got["last"]) == (N - 1 if first != N - 1 else N - 2)
    assert int(hvd.allreduce(tf.constant(1), op=hvd.Sum)) == N  # and the group works on


def test_collectives_other_than_allreduce_fail_while_a_rank_has_joined():
    if R == 0:
        assert int(hvd.join()) == N - 1
    else:
        with pytest.raises(tf.errors.FailedPreconditionError, match=r"rank 0 .*join\(\)"):
            hvd.allgather(tf.ones([2]))
        with pytest.raises(tf.errors.FailedPreconditionError, match="join"):
            hvd.broadcast(tf.ones([2]), root_rank=1)
        assert int(hvd.join()) == N - 1
    np.testing.assert_array_equal(hvd.allgather(tf.fill([1], R)).numpy(), np.arange(N))


# ---------------------------------------------------------- process sets


@pytest.fixture
def sets():
    """The even and the odd ranks as process sets (added by every rank),
    removed afterwards; at N = 2 the odd set is rank 1 alone."""
    even = hvd.add_process_set(list(range(0, N, 2)))
    odd = hvd.add_process_set(hvd.ProcessSet(range(1, N, 2)))
    yield even, odd
    assert hvd.remove_process_set(even) and hvd.remove_process_set(odd)


def mine(sets):
    even, odd = sets
    return even if R % 2 == 0 else odd


def test_process_set_identity_and_registry(sets):
    even, odd = sets
    ps = mine(sets)
    assert even.process_set_id != odd.process_set_id and 0 not in (even.process_set_id, odd.process_set_id)
    assert ps.included() and ps.rank() == R // 2 and ps.size() == len(ps.ranks)
    other = odd if ps is even else even
    assert other.included() is False and other.rank() == -1
    assert int(hvd.size_op(process_set_id=ps.process_set_id)) == ps.size()
    assert int(hvd.process_set_included_op(process_set_id=other.process_set_id)) == 0
    assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks() == {
        0: list(range(N)), even.process_set_id: even.ranks, odd.process_set_id: odd.ranks}
    assert str(even) == f"ProcessSet(process_set_id={even.process_set_id}, ranks={even.ranks}, mpi_comm=None)"
    # The same ranks again, or the whole group's: ValueError, as Horovod.
    with pytest.raises(ValueError, match="duplicate"):
        hvd.add_process_set(list(range(0, N, 2)))
    with pytest.raises(ValueError, match="duplicate"):
        hvd.add_process_set(range(N))
    assert hvd.remove_process_set(hvd.global_process_set) is False


@pytest.mark.parametrize("dtype", [tf.uint8, tf.int32, tf.float16, tf.float32], ids=lambda d: d.name)
def test_collectives_in_a_process_set(run, sets, dtype):
    ps = mine(sets)
    members = ps.ranks
    x = tf.constant(value_of(R, dtype))
    summed = run(lambda: hvd.allreduce(x, op=hvd.Sum, process_set=ps))
    want = np.sum([value_of(r, dtype).astype(np.int64 if dtype.is_integer else np.float64) for r in members], 0)
    np.testing.assert_array_equal(summed, want.astype(dtype.as_numpy_dtype))
    # All-gather: a first dimension per member, in the set's rank order.
    g = run(lambda: hvd.allgather(tf.fill([R + 1, 2], tf.cast(R, dtype)), process_set=ps))
    np.testing.assert_array_equal(g, np.concatenate([np.full([r + 1, 2], r) for r in members]).astype(
        dtype.as_numpy_dtype))
    # Broadcast: root_rank is a global rank, as in Horovod.
    root = members[-1]
    b = run(lambda: hvd.broadcast(tf.fill([5], tf.cast(R, dtype)), root, process_set=ps))
    np.testing.assert_array_equal(b, np.full([5], root, dtype.as_numpy_dtype))
    # Reduce-scatter over the set's size, and all-to-all between its members.
    rows = 2 * len(members)
    rs = run(lambda: hvd.reducescatter(tf.ones([rows, 3], dtype), op=hvd.Sum, process_set=ps))
    np.testing.assert_array_equal(rs, np.full([2, 3], len(members), dtype.as_numpy_dtype))
    a2a = run(lambda: hvd.alltoall(tf.fill([len(members), 1], tf.cast(R, dtype)), process_set=ps))
    np.testing.assert_array_equal(a2a.ravel(), np.array(members, dtype.as_numpy_dtype))
    hvd.barrier(process_set=ps)
    # The whole group still works between the sets' collectives.
    np.testing.assert_allclose(hvd.allreduce(tf.ones([2]), op=hvd.Sum).numpy(), [N, N])


def test_gradients_and_tape_in_a_process_set(sets):
    even, _ = sets
    x = tf.Variable([float(R)])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = hvd.allreduce(x * x, op=hvd.Average, process_set=mine(sets))
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, [2.0 * R])  # d(mean over the set of x^2)/dx, averaged back over the set
    # DistributedGradientTape: members average over the set, others keep
    # their own gradient (Horovod's rule).
    v = tf.constant(float(R))
    with tf.GradientTape() as t2:
        t2.watch(v)
        z = v * v
    (dv,) = hvd.DistributedGradientTape(t2, process_set=even).gradient(z, [v])
    want = 2.0 * np.mean(even.ranks) if even.included() else 2.0 * R
    assert float(dv) == pytest.approx(want)


def test_process_set_errors(sets):
    even, odd = sets
    other = odd if R % 2 == 0 else even
    if N > 1 and other.ranks:
        # A rank outside the set: InvalidArgumentError naming it, as Horovod.
        with pytest.raises(tf.errors.InvalidArgumentError, match="not one of its members"):
            hvd.allreduce(tf.ones([4]), process_set=other)
    fake = hvd.ProcessSet([0])
    fake.process_set_id = 99
    with pytest.raises(ValueError, match="was not added"):
        hvd.allreduce(tf.ones([4]), process_set=fake)
    # Members of one set whose shapes differ fail on every member of it.
    ps = mine(sets)
    if ps.size() > 1:
        with pytest.raises(tf.errors.FailedPreconditionError):
            hvd.allreduce(tf.ones([3 + ps.rank()]), process_set=ps)
    np.testing.assert_allclose(hvd.allreduce(tf.ones([2]), op=hvd.Sum).numpy(), [N, N])


def test_members_that_disagree_on_a_process_set_fail_everywhere():
    if N < 2:
        pytest.skip("needs two ranks")
    with pytest.raises(FailedPreconditionError, match=r"disagree.*/job:"):
        hvd.add_process_set([R])  # every rank a different set
    assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks() == {0: list(range(N))}
    np.testing.assert_allclose(hvd.allreduce(tf.ones([2]), op=hvd.Sum).numpy(), [N, N])


def test_timeline_is_a_chrome_trace_of_the_collectives(tmp_path):
    import json
    path = tmp_path / f"timeline-{R}.json"
    hvd.start_timeline(str(path))
    hvd.allreduce(tf.ones([4]), op=hvd.Sum)
    hvd.allreduce(tf.ones([1024]), op=hvd.Sum)
    hvd.allgather(tf.ones([R + 1]))
    hvd.stop_timeline()
    hvd.allreduce(tf.ones([4]))  # after the stop: not in the file
    events = [e for e in json.loads(path.read_text()) if e["ph"] == "X"]
    names = [e["name"] for e in events]
    # A small all-reduce (16 bytes) is one all-gather: its agreement carries
    # the data, no round trip of its own. A larger one (4 KiB) agrees, then
    # reduces; the all-gather op agrees, then gathers.
    assert names[:3] == ["all-gather", "all-gather", "all-reduce"], names
    assert names.count("all-reduce") == 1 and names.count("all-gather") >= 4, names
    assert all(e["pid"] == R and e["dur"] >= 0 and e["args"]["outcome"] == "ok" for e in events)
    with pytest.raises(Exception, match="cannot create"):
        hvd.start_timeline(str(tmp_path / "no-such-dir" / "t.json"))


def test_keras_is_an_attribute_without_a_second_import():
    import ringmaster.tensorflow as rm
    assert hasattr(rm.keras, "DistributedOptimizer")


def test_shard_dataset_by_element_and_by_file(tmp_path):
    elems = list(hvd.shard_dataset(tf.data.Dataset.range(4 * N)).as_numpy_iterator())
    assert elems == list(range(R, 4 * N, N))
    # A pipeline that reads files is sharded by file (every rank writes the same files).
    files = []
    for f in range(N):
        path = tmp_path / f"part-{f}.txt"
        path.write_text("".join(f"{f}-{i}\n" for i in range(3)))
        files.append(str(path))
    lines = hvd.shard_dataset(tf.data.TextLineDataset(files))
    assert [x.decode() for x in lines.as_numpy_iterator()] == [f"{R}-{i}" for i in range(3)]


def test_elastic_state_commit_restore_sync():
    v = tf.Variable([float(R), float(R)])
    state = hvd.elastic.TensorFlowState([v], batch=10 + R, epoch=R)
    state.sync()  # rank 0's variables and attributes everywhere
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])
    assert (state.batch, state.epoch) == (10, 0)
    v.assign([5.0, 5.0])
    state.batch = 11
    state.restore()  # back to the last commit (the sync)
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])
    assert state.batch == 10
    v.assign([7.0, 7.0])
    state.batch = 12
    state.commit()
    v.assign([9.0, 9.0])
    state.restore()
    np.testing.assert_array_equal(v.numpy(), [7.0, 7.0])
    assert state.batch == 12
    import ringmaster.tensorflow.keras as hvdk
    assert hasattr(hvdk.elastic, "KerasState") and hasattr(hvdk.elastic, "CommitStateCallback")
