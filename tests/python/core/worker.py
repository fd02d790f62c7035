"""One member of a test group: python worker.py SCENARIO RANK SIZE.

Checks its own results (assert) and prints `RESULT {json}` last; the test
(test_collectives.py) checks exit codes and what the members report.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import numpy as np

import ringmaster

SCENARIO, RANK, SIZE = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def result(**kw) -> None:
    print("RESULT " + json.dumps(kw), flush=True)


def dtypes():
    import ml_dtypes  # NumPy's bfloat16

    return [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.int64,
            np.uint8, np.int8, np.uint16, np.int16]


class DLPackOnly:
    """A tensor that offers only the DLPack protocol (as torch/jax/TF do)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class TFLikeReduceOp:
    """Duck-types tf.distribute.ReduceOp.MEAN (.value 'MEAN')."""

    value = "MEAN"


class TFLikeImplementation:
    value = "RING"


class TFLikeOptions:
    """Duck-types tf.distribute.experimental.CommunicationOptions."""

    bytes_per_pack = 16
    timeout_seconds = 30.0
    implementation = TFLikeImplementation()


def expected(op: str, base: np.ndarray) -> np.ndarray:
    per_rank = [base + r + 1 for r in range(SIZE)]
    if op == "sum":
        return sum(per_rank)
    if op == "mean":
        return sum(per_rank) / SIZE  # exact: the sum is a multiple of SIZE
    if op == "min":
        return np.minimum.reduce(per_rank)
    if op == "max":
        return np.maximum.reduce(per_rank)
    return np.multiply.reduce(per_rank)


def scenario_dtypes(comm: ringmaster.Communicator) -> dict:
    checked = 0
    base = np.arange(6, dtype=np.float64)  # products stay exact in float16/bfloat16
    for dtype in dtypes():
        for op in ("sum", "mean", "min", "max", "product"):
            x = (base + RANK + 1).astype(dtype)
            out = comm.all_reduce(x, op=op)
            assert out is x, f"{op} {dtype}: not the same object"
            want = expected(op, base)
            if np.issubdtype(dtype, np.integer):  # products wrap around in 8 bits
                want = want.astype(np.int64).astype(dtype).astype(np.float64)
            got = x.astype(np.float64)
            assert np.array_equal(got, want), f"{op} {np.dtype(dtype).name}: {got} != {want}"
            checked += 1
    # Spellings: upper case, "prod", and a tf.distribute.ReduceOp look-alike.
    x = (base + RANK + 1).astype(np.float32)
    assert comm.all_reduce(x, op="SUM") is x and np.array_equal(x, expected("sum", base))
    x = (base + RANK + 1).astype(np.float32)
    comm.all_reduce(x, op="prod")
    assert np.array_equal(x, expected("product", base))
    x = (base + RANK + 1).astype(np.float32)
    comm.all_reduce(x, op=TFLikeReduceOp())
    assert np.array_equal(x, expected("mean", base))
    # Unsupported dtypes, and reductions of bool, are refused before anything is sent.
    for bad in (np.bool_, np.uint32):
        try:
            comm.all_reduce(np.zeros(3, dtype=bad))
        except ringmaster.InvalidArgumentError as e:
            assert np.dtype(bad).name in str(e), str(e)
        else:
            raise AssertionError(f"{np.dtype(bad).name} was accepted")
    return {"checked": checked}


def scenario_collectives(comm: ringmaster.Communicator) -> dict:
    assert ringmaster.init() is comm and ringmaster.default_communicator() is comm
    assert comm.task_name(RANK) == f"/job:worker/task:{RANK}", comm.task_name(RANK)
    assert comm.health() is None
    # A list, with per-call options (small packs: several collectives).
    a = np.full(100, RANK + 1, dtype=np.float32)
    b = np.arange(10, dtype=np.int64) * (RANK + 1)
    out = comm.all_reduce([a, b], op="sum", options=ringmaster.CommunicationOptions(bytes_per_pack=64))
    total = SIZE * (SIZE + 1) // 2
    assert isinstance(out, list) and out[0] is a and out[1] is b
    assert np.array_equal(a, np.full(100, total, dtype=np.float32)), a
    assert np.array_equal(b, np.arange(10) * total), b
    # TF-style options (duck-typed) are accepted.
    c = np.ones(40, dtype=np.float64)
    comm.all_reduce(c, options=TFLikeOptions())
    assert np.array_equal(c, np.full(40, SIZE))
    # Async: the handle gives back the very arrays.
    d = np.full((4, 5), float(RANK), dtype=np.float64)
    e = np.full(7, RANK, dtype=np.int32)
    h = comm.all_reduce_async([d, e], op="max")
    got = h.wait()
    assert h.done() and got[0] is d and got[1] is e
    assert np.all(d == SIZE - 1) and np.all(e == SIZE - 1)
    # A handle dropped unwaited: its arrays live until the call is over
    # (the handle waits as it goes), and the group stays usable.
    h = comm.all_reduce_async(np.full(1000, 1.0))
    del h
    d2 = np.full(3, 2.0)
    comm.all_reduce_async(d2).wait()
    assert np.all(d2 == 2.0 * SIZE), d2
    # Broadcast from rank 1.
    f = np.arange(12, dtype=np.float32).reshape(3, 4) + 10 * RANK
    assert comm.broadcast(f, root=1) is f
    assert np.array_equal(f, np.arange(12, dtype=np.float32).reshape(3, 4) + 10), f
    # bool moves as bytes.
    flags = np.array([RANK == 1, True, False, RANK == 0])
    assert comm.broadcast(flags, root=1) is flags
    assert flags.tolist() == [True, True, False, False], flags
    # All-gather: rank order along axis 0.
    g = np.full((2, 3), RANK, dtype=np.int64)
    gathered = comm.all_gather(g)
    assert gathered.shape == (2 * SIZE, 3)
    assert np.array_equal(gathered[:, 0], np.repeat(np.arange(SIZE), 2)), gathered
    comm.barrier()
    comm.barrier(options=ringmaster.CommunicationOptions(timeout_seconds=30))
    # reduce(MEAN, axis=0) with uneven batches: rank r has r+1 rows.
    rows = [np.arange((r + 1) * 4, dtype=np.float64).reshape(r + 1, 4) + 100 * r for r in range(SIZE)]
    mean = comm.reduce("mean", rows[RANK], axis=0)
    want = np.concatenate(rows).mean(axis=0)
    assert mean.shape == (4,) and np.allclose(mean, want), (mean, want)
    summed = comm.reduce("sum", rows[RANK], axis=0)
    assert np.allclose(summed, np.concatenate(rows).sum(axis=0)), summed
    whole = comm.reduce("sum", np.full((2, 2), RANK + 1.0), axis=None)
    assert whole.shape == (2, 2) and np.all(whole == total)
    last = comm.reduce("max", np.full((3, 2), float(RANK)), axis=-1)
    assert last.shape == (3,) and np.all(last == SIZE - 1)
    # Read-only and strided inputs: copied, reduced, returned new.
    ro = np.ones(5, dtype=np.float32)
    ro.setflags(write=False)
    ro_out = comm.all_reduce(ro)
    assert ro_out is not ro and np.all(ro == 1) and np.all(ro_out == SIZE)
    big = np.ones((4, 6), dtype=np.float32)
    strided = big[:, ::2]
    st_out = comm.all_reduce(strided)
    assert st_out is not strided and np.all(big == 1) and np.all(st_out == SIZE)
    # Out of place (out=): the inputs are only read, even read-only ones,
    # with every algorithm; the results land in `out`, which is returned.
    for algorithm in ("ring", "rd", "hd", "auto"):
        src = np.arange(100_003, dtype=np.float32) * (RANK + 1)
        src.setflags(write=False)
        small = np.full(3, RANK + 1, dtype=np.int64)
        dst, small_dst = np.full(100_003, np.nan, dtype=np.float32), np.zeros(3, dtype=np.int64)
        opts = ringmaster.CommunicationOptions(algorithm=algorithm)
        got = comm.all_reduce([src, small], out=[dst, small_dst], options=opts)
        assert got[0] is dst and got[1] is small_dst, algorithm
        assert np.array_equal(dst, np.arange(100_003, dtype=np.float32) * total), (algorithm, dst[:4])
        assert np.all(small_dst == total) and np.all(small == RANK + 1), algorithm
        assert np.array_equal(src, np.arange(100_003, dtype=np.float32) * (RANK + 1)), algorithm
    one = np.empty(2)
    assert comm.all_reduce(np.full(2, 1.0), op="max", out=one) is one and np.all(one == 1.0)
    for bad_out, words in ((np.empty(3, np.float32), "out[0]: must be float64 of 2 elements"),
                           (np.empty(4)[::2], "out[0]: must be a writable C-contiguous array"),
                           ([np.empty(2), np.empty(2)], "out: must match values")):
        try:
            comm.all_reduce(np.full(2, 1.0), out=bad_out)
        except ringmaster.InvalidArgumentError as err:
            assert words in str(err), (words, str(err))
        else:
            raise AssertionError(f"accepted out={bad_out!r}")
    # out[i] being values[i] itself is in place; inputs may overlap each
    # other; any other overlap with an output is refused, naming both.
    same = np.full(5, float(RANK + 1))
    assert comm.all_reduce(same, out=same) is same and np.all(same == total)
    shared = np.arange(6, dtype=np.float64)
    o1, o2 = np.empty(4), np.empty(4)
    comm.all_reduce([shared[:4], shared[2:]], out=[o1, o2])
    assert np.array_equal(o1, np.arange(4) * SIZE) and np.array_equal(o2, np.arange(2, 6) * SIZE), (o1, o2)
    buf = np.zeros(12)
    for values, out, words in ((buf[:6], buf[4:10], "out[0]: overlaps values[0]"),
                               ([np.ones(4), np.ones(4)], [buf[:4], buf[2:6]], "out[1]: overlaps out[0]"),
                               ([buf[:4], np.ones(4)], [np.empty(4), buf[3:7]], "out[1]: overlaps values[0]")):
        try:
            comm.all_reduce(values, out=out)
        except ringmaster.InvalidArgumentError as err:
            assert words in str(err), (words, str(err))
        else:
            raise AssertionError(f"accepted an out overlapping: {words}")
    # DLPack: the producer's memory is reduced in place, no copy.
    backing = np.full(8, RANK + 1, dtype=np.float32)
    wrapped = DLPackOnly(backing)
    assert comm.all_reduce(wrapped) is wrapped
    assert np.all(backing == total), backing
    # Wrong root / rank are InvalidArgument.
    for call in (lambda: comm.task_name(SIZE), lambda: comm.reduce("mean", np.ones((2, 2)), axis=2)):
        try:
            call()
        except ringmaster.InvalidArgumentError:
            pass
        else:
            raise AssertionError("accepted a bad rank/axis")
    # Abort: every member sees Aborted; reform makes the group usable again.
    # Abort while the others are inside an all-reduce (in flight).
    comm.barrier()
    if RANK == 0:
        time.sleep(1.0)
        comm.abort("test abort")
    aborted = ""
    try:
        comm.all_reduce(np.ones(4), options=ringmaster.CommunicationOptions(timeout_seconds=20))
    except ringmaster.AbortedError as err:
        # Every member, also one whose data connection to rank 0 closes (rank
        # 0 reforms right away) before rank 0's abort notice is read: the
        # engine waits a moment for the notice, so the cause is the abort.
        aborted = str(err)
    assert aborted, "no error after abort()"
    try:
        comm.health()
    except ringmaster.AbortedError:
        pass
    else:
        raise AssertionError("health() passed after abort()")
    comm.reform()
    assert comm.health() is None
    z = np.ones(3)
    comm.all_reduce(z)
    assert np.all(z == SIZE)
    return {"aborted": aborted}


def scenario_cuda_dlpack(comm: ringmaster.Communicator) -> dict:
    """Hand-made CUDA DLPack arrays (cuda_producer.py, no GPU) through the
    real extension: each call reaches the engine's GPU path, and the engine's
    answer comes back; every export is given back to its producer once."""
    from cuda_producer import FakeCudaArray

    out: dict = {}
    a, b = FakeCudaArray((4,)), FakeCudaArray((2, 3), bits=64)
    try:
        comm.all_reduce([a, b], stream=0x5000)
    except ringmaster.RingmasterError as e:
        out["sync"] = [type(e).__name__, str(e)]
    out["sync_calls"] = [a.calls, b.calls]
    out["sync_deleted"] = [a.deleted, b.deleted]
    c = FakeCudaArray((8,), versioned=True)
    handle = comm.all_reduce_async(c)
    try:
        handle.wait()
    except ringmaster.RingmasterError as e:
        out["async"] = [type(e).__name__, str(e)]
    out["async_calls"], out["async_deleted"] = c.calls, c.deleted
    src, dst = FakeCudaArray((4,)), FakeCudaArray((4,))
    try:
        comm.all_reduce(src, out=dst)
    except ringmaster.RingmasterError as e:
        out["out"] = [type(e).__name__, str(e)]
    out["out_deleted"] = [src.deleted, dst.deleted]
    try:
        comm.broadcast(FakeCudaArray((4,)))
    except ringmaster.RingmasterError as e:
        out["broadcast"] = [type(e).__name__, str(e)]
    # The group still reduces host memory afterwards.
    host = np.full(3, float(RANK + 1))
    assert comm.all_reduce(host) is host and np.all(host == SIZE * (SIZE + 1) / 2), host
    return out


def scenario_stall(comm: ringmaster.Communicator) -> dict:
    if RANK == SIZE - 1:
        time.sleep(8)  # never joins the collective in time
        return {}
    # A Python thread keeps running while we block: the call holds no GIL.
    ticks = [0]
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.01):
            ticks[0] += 1

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    start = time.monotonic()
    try:
        comm.all_reduce(np.ones(16), options=ringmaster.CommunicationOptions(timeout_seconds=2))
    except ringmaster.DeadlineExceededError as e:
        seconds = time.monotonic() - start
        stop.set()
        ticker.join()
        assert ticks[0] > 20, f"only {ticks[0]} ticks in {seconds:.1f} s: the GIL was held"
        # Stay in the group a while: a member that exits at once would fail
        # the others' call with Unavailable before their own deadline fires.
        time.sleep(4)
        return {"error": "DeadlineExceededError", "message": str(e), "code": e.code,
                "seconds": seconds}
    raise AssertionError("the all-reduce finished without the stalled member")


def scenario_kill(comm: ringmaster.Communicator) -> dict:
    comm.barrier()  # the victim is in the group
    if RANK == SIZE - 1:
        print("READY", flush=True)
        time.sleep(600)  # SIGKILLed by the test
        return {}
    try:
        comm.all_reduce(np.ones(1 << 12))  # no timeout: only loss detection ends it
    except ringmaster.UnavailableError as e:
        return {"error": "UnavailableError", "message": str(e), "at": time.time()}
    raise AssertionError("the all-reduce finished without the killed member")


def main() -> None:
    if SCENARIO == "formation":
        start = time.monotonic()
        try:
            ringmaster.init()
        except ringmaster.RingmasterError as e:
            result(ok=True, error=type(e).__name__, message=str(e), seconds=time.monotonic() - start)
            os._exit(0)
        raise AssertionError("formed a group with a member missing")
    comm = ringmaster.init()
    assert comm.rank == RANK and comm.size == SIZE, (comm.rank, comm.size)
    if SCENARIO == "kill":
        if RANK == SIZE - 1:
            scenario_kill(comm)
        else:
            out = scenario_kill(comm)
            result(ok=True, **out)
            # The group is broken: leave without a clean goodbye.
            os._exit(0)
    out = globals()["scenario_" + SCENARIO](comm)
    if SCENARIO == "stall":
        result(ok=True, **out)
        os._exit(0)  # the stalled member's group is broken; skip teardown
    ringmaster.shutdown()
    assert ringmaster.default_communicator() is None
    result(ok=True, **out)


if __name__ == "__main__":
    main()
