"""The program of tests/python/tf/test_checkpoint.py.

    checkpoint_worker.py job            a rank of a job under `ringmaster run`
    checkpoint_worker.py unit DIR       one process: the module's unit checks (JSON on the last line)
    checkpoint_worker.py die-mid-write DIR
                                        one process: saves once, then dies (os._exit(9)) in the middle
                                        of writing the second checkpoint

`job`: a tiny MLP on synthetic data (deterministic: no shuffling, no
dropout), EPOCHS epochs of STEPS steps, a checkpoint at each epoch's end
($RINGMASTER_CHECKPOINT_DIR). With $CKPT_TEST_CRASH_MARKER set, worker 1
exits abruptly after batch 1 of epoch CRASH_EPOCH unless the marker file
exists (it creates it first): so only its first incarnation dies.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringmaster  # noqa: E402
import ringmaster.tensorflow as rm  # noqa: E402
import ringmaster.tensorflow.keras as rmk  # noqa: E402

EPOCHS = 6
STEPS = 4          # per epoch
LOCAL_BATCH = 8
CRASH_EPOCH = 3    # 0-based: checkpoints after epochs 0, 1 and 2 exist by then (epoch 3 completed = 3)
CRASH_AFTER_BATCH = 1


def make_model(hidden: int = 16, seed: int = 0) -> keras.Model:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=rmk.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)), loss="mse",
                  jit_compile=False)
    return model


def data(n: int):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    y = (x @ rng.normal(size=(8, 1)) + 0.1 * np.sin(3 * x[:, :1])).astype(np.float32)
    return x, y


def digest(model: keras.Model) -> str:
    return hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights())).hexdigest()


class Steps(keras.callbacks.Callback):
    """Counts this incarnation's steps; worker 1's first incarnation dies in epoch CRASH_EPOCH."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank, self.steps, self.epoch = rank, 0, 0
        self.marker = os.environ.get("CKPT_TEST_CRASH_MARKER")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if (self.marker and self.rank == 2 and self.epoch == CRASH_EPOCH and batch == CRASH_AFTER_BATCH
                and not os.path.exists(self.marker)):
            Path(self.marker).write_text("crashed\n")
            print(f"crash rank {self.rank} epoch {self.epoch} batch {batch}", flush=True)
            os._exit(3)


def job() -> int:
    rm.init()
    rank, size = rm.rank(), rm.size()
    x, y = data(size * STEPS * LOCAL_BATCH)
    xs, ys = x[rank::size], y[rank::size]
    model = make_model(seed=100 + rank)  # different on purpose: restore's broadcast makes them equal
    position = rmk.checkpoint.restore(model)
    start = int(model.optimizer.iterations.numpy())
    where = "none" if position is None else f"epoch {position.epoch} batch {position.batch} step {position.step}"
    print(f"start rank {rank} restart {os.environ.get('RINGMASTER_RESTART_COUNT')} resumed {where} "
          f"iterations {start} weights sha256 {digest(model)}", flush=True)
    counter = Steps(rank)
    model.fit(xs, ys, batch_size=LOCAL_BATCH, epochs=EPOCHS, initial_epoch=rmk.checkpoint.initial_epoch(position),
              shuffle=False, verbose=0, callbacks=[rmk.callbacks.CheckpointCallback(), counter])
    print(f"done rank {rank} trained {counter.steps} iterations {int(model.optimizer.iterations.numpy())} "
          f"weights sha256 {digest(model)}", flush=True)
    rm.all_reduce("sum", tf.constant(0))  # a barrier: no rank ends (and stops the job) before all have printed
    return 0


def state(model: keras.Model) -> list:
    return [np.asarray(v.numpy()) for v in model.weights + model.optimizer.variables]


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                                    for x, y in zip(a, b))


def die_mid_write(directory: str) -> int:
    rm.init()
    model = make_model()
    x, y = data(32)
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    rmk.checkpoint.save(model, directory, epoch=1)
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    from ringmaster.tensorflow.keras import _checkpoint_files as files  # the on-disk format
    real = files._write_file

    def write_then_die(path, data):
        real(path, data)
        os._exit(9)  # after the first file of the second checkpoint: no rename, no cleanup

    files._write_file = write_then_die
    rmk.checkpoint.save(model, directory, epoch=2)
    return 1  # not reached


def unit(directory: str) -> int:
    rm.init()
    out: dict = {}
    d = Path(directory)
    # What a killed writer left (die-mid-write): the first checkpoint is the latest, the partial one ignored.
    out["after_kill"] = sorted(p.name for p in d.iterdir())
    fresh = make_model(seed=5)
    pos = rmk.checkpoint.restore(fresh, d)
    out["after_kill_restored"] = None if pos is None else [pos.epoch, pos.batch, pos.step]
    # Save, then restore into a model with other initial weights: bit-identical state.
    x, y = data(32)
    fresh.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    saved = state(fresh)
    path = rmk.checkpoint.save(fresh, d, epoch=7, batch=0)
    out["save_path"] = path.name
    out["after_save"] = sorted(p.name for p in d.iterdir())  # the stale .tmp- directory is gone
    other = make_model(seed=9)  # its optimizer is not built yet: restore builds it
    out["other_differs"] = not same(state(other)[:4], saved[:4])
    pos = rmk.checkpoint.restore(other, d)
    out["restored"] = [pos.epoch, pos.batch, pos.step]
    out["restored_equal"] = same(state(other), saved)
    # keep=2: three more saves leave the two newest.
    for e in range(3):
        other.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        rmk.checkpoint.save(other, d, epoch=8 + e, keep=2)
    out["kept"] = sorted(p.name for p in d.iterdir())
    newest = rmk.checkpoint.latest(d)
    # A damaged newest checkpoint: skipped with a warning for the one before it.
    state_file = newest / "state.npz"
    raw = bytearray(state_file.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    state_file.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pos = rmk.checkpoint.restore(make_model(seed=3), d)
    out["damaged_restored"] = [pos.epoch, pos.batch, pos.step]
    out["damaged_warning"] = [str(i.message) for i in w if "skipping" in str(i.message)]
    # A checkpoint of another model: the error names the variable.
    try:
        rmk.checkpoint.restore(make_model(hidden=17), d)
        out["mismatch"] = "restored"
    except ringmaster.InvalidArgumentError as e:
        out["mismatch"] = str(e)
    # Another optimizer (no momentum slots): the error names what is missing.
    plain = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    plain.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", jit_compile=False)
    try:
        rmk.checkpoint.restore(plain, d)
        out["mismatch_optimizer"] = "restored"
    except ringmaster.InvalidArgumentError as e:
        out["mismatch_optimizer"] = str(e)
    # No directory: restore returns None; the callback does nothing and says so once.
    os.environ.pop(rmk.checkpoint.ENV_DIR, None)
    out["no_dir_restore"] = rmk.checkpoint.restore(make_model())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = make_model()
        for _ in range(2):
            m.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[rmk.callbacks.CheckpointCallback()])
    out["no_dir_warnings"] = [str(i.message) for i in w if "CheckpointCallback" in str(i.message)]
    # every_n_batches, from the environment variable: mid-epoch and epoch-end positions.
    env_dir = d / "env"
    os.environ[rmk.checkpoint.ENV_DIR] = str(env_dir)
    m = make_model()
    cb = rmk.callbacks.CheckpointCallback(every_n_batches=2, keep=10)
    m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    out["every_n"] = [json.loads((p / "position.json").read_text()) for p in sorted(env_dir.iterdir())]
    out["every_n"] = [[p["epoch"], p["batch"], p["step"]] for p in out["every_n"]]
    try:
        rmk.callbacks.CheckpointCallback(every_n_batches=0)
        out["bad_every_n"] = "accepted"
    except ValueError as e:
        out["bad_every_n"] = str(e)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "job":
        sys.exit(job())
    if mode == "unit":
        sys.exit(unit(sys.argv[2]))
    if mode == "die-mid-write":
        sys.exit(die_mid_write(sys.argv[2]))
    sys.exit(f"unknown mode {mode}")
