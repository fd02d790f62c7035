"""Ringmaster against MultiWorkerMirroredStrategy and Horovod 0.28.1 on a Keras
model's gradients and training step: N = 3 processes on 127.0.0.1, side by
side, in rounds, one run.

    bench_keras.py [--out DIR] [--rounds 7] [--iters 6] [--warmup 2]
                   [--model full|small] [--groups G,G,...] [--cases C,C,...]
                   [--horovod-python PY | --horovod-unavailable REASON]
                   [--hosts local|netns] [--bytes-per-pack B]
    bench_keras.py --rank GROUP ...        (one rank; started by the launcher)

--hosts netns (scripts/bench keras-shaped): rank i runs on emulated host
i + 1 of bench/network/topo.sh (which must be up with 3 hosts), addressed
by its IP, links shaped; the report is then each step against max(compute
alone, its all-reduce alone) (keras_ratios.shaped_ratios).

Rounds. K times (--rounds), the launcher runs each group in turn: it
starts the group's ranks, waits until each has formed its group and says it
is ready, then tells them to run their cases (--warmup + --iters iterations
each), takes their results and ends them before the next group starts. A
round is every group once, back to back, in the order given (reversed in
odd rounds, so that a drift within a round falls on each side of a ratio in
turn). Within a group, the cases start one later each round
(rotated), so that no case is always the first or the last of its
process's life. Every ratio is computed per round, between groups that ran
in that round, and reported as its median over the rounds with the min-max spread
and every round's value (rounds.py). Start-up is outside the timed part;
the rounds table says what it cost. --keep G,G keeps those groups' ranks
through all rounds instead (a waiting rank polls a file every 50 ms, no
CPU), for a machine with the memory: here a rank holds 2-3.7 GB after a
few rounds, and six groups of them do not fit in 24 GiB. Horovod's ranks
are never kept: their background thread coordinates over Gloo every 1 ms
even with nothing to reduce (7-13 % of a vCPU per waiting rank here).

Each group has its own deadline per round (--group-timeout); a group that
fails or passes it is killed and left out of the later rounds, the others
go on. Every process is killed when the launcher exits. Output in DIR:
tables.md, ratios.csv (every ratio per round) and ratios.png, summary.csv
(each ratio's median and spread), results.csv (every rank's every
iteration, by round), each rank's log.

The horovod group runs Horovod 0.28.1 in its own venv
(bench/tensorflow/horovod-venv: TensorFlow 2.13.1 and Keras 2.13, the newest
Horovod 0.28.1 builds against; the other groups run in scripts/tf-venv's
TensorFlow) under `horovodrun -np 3 --gloo -H localhost:3` with that venv's
python (--horovod-python). Without --horovod-python the table says why it
was not measured (--horovod-unavailable).

The model (tf_keras, or Keras 3 for the Keras 3 fit): Dense 1024 -> 4096 ->
4096 -> 1024 -> 10, 8 gradients, 25,185,290 float32 (100.7 MB); a local
batch of 32 (global 96), plain SGD. Cases, timed per iteration on every
rank (rank 0's in the tables), the warm-up iterations of each round dropped:

  allreduce*  the 8 gradient-shaped tensors summed across the ranks:
             rm.all_reduce("sum", grads), grouped_allreduce(grads, op=Sum),
             [allreduce(g, op=Sum) for g in grads], each in a tf.function
             and eagerly (-eager); strategy.run(fn) with
             get_replica_context().all_reduce(SUM, grads,
             CommunicationOptions(RING)) under TensorFlow's strategy and
             ours; and the engine alone on NumPy arrays of the same shapes
             (allreduce-engine: ringmaster.default_communicator(), in place,
             one call), what our Python paths are measured against; and out
             of place (allreduce-engine-out: all_reduce(arrays, out=...), the
             inputs only read), the work TensorFlow's semantics ask of the op
             on tensors held elsewhere, as the captured gradients here; and
             one call per tensor, out of place (allreduce-engine-pertensor),
             the work 8 eager per-tensor calls must do: each returns its sum
             before the next starts, and eager inputs are held by Python;
             and in place on 8 buffers TensorFlow allocated
             (allreduce-engine-tf): NumPy gets huge pages for large arrays,
             TensorFlow's tensors do not.
             Every one is checked after timing: each rank's (rank + 1) sums
             to 6.
  strategy-run-eager  strategy.run(fn) eagerly under our strategy, fn the
             all-reduce case's with its all_reduce replaced by a merge_call
             that hands the 8 tensors back, no all-reduce: TensorFlow's own
             cost of running a replica function eagerly (a thread per
             replica and the merge_call hand-off), which its all_reduce
             eagerly pays on top of the op.
  tape       DistributedGradientTape(op=Sum) over a loss linear in 8
             variables of the gradients' shapes (its gradients are 8
             tensors of those shapes), and the same tape without it
             (tape/none): the tape's cost over the engine's; and the same
             tape without it, then the engine on the very buffers of its
             gradients (tape-engine: in place in a tf.function, where the
             op may overwrite them; out of place eagerly, where Python holds
             them), the work DistributedGradientTape must do, in one call.
  step       custom loop (tf.function): forward, backward, all-reduce, SGD
             apply. rm.DistributedGradientTape against strategy.run(step)
             (the replica all-reduces the gradients itself, with RING, and
             applies them with skip_gradients_aggregation).
  fit        model.fit, one batch per iteration (a callback stamps the end
             of each batch): tf_keras under MWMS against tf_keras and Keras 3
             with rm.keras.DistributedOptimizer (+ BroadcastGlobalVariables).
  rm-mwms    the allreduce, step and fit cases of MWMS, the same code under
             ringmaster.tensorflow.MultiWorkerMirroredStrategy (the
             constructor the only change).
  compute    the same step / fit without any all-reduce: 3 ranks at once
             and one process alone (size 1).

Against Horovod, the same code on both sides (ringmaster.tensorflow is
Horovod-named): the grouped and per-tensor all-reduces, the custom-loop step
with DistributedGradientTape (default op Average), model.fit with Keras 2
and DistributedOptimizer + BroadcastGlobalVariablesCallback, and the step's
and fit's compute floor on Horovod's TensorFlow.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from keras_groups import MODELS  # noqa: E402
from keras_launcher import launcher_main  # noqa: E402
from keras_rank import rank_main  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build-bench/keras")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=6, help="timed iterations per case and round")
    p.add_argument("--warmup", type=int, default=2, help="warm-up iterations per case and round (dropped)")
    p.add_argument("--model", choices=sorted(MODELS), default="full")
    # The default order puts the groups of each ratio next to each other
    # (Keras 3 | MWMS | our strategy | Ringmaster's API | Horovod), so that
    # a ratio compares figures taken seconds apart, not minutes.
    p.add_argument("--groups", default="rm-keras3,mwms,rm-mwms,rm-tf_keras,horovod,single",
                   help="groups, in a round's order (default: all)")
    p.add_argument("--horovod-python", default="",
                   help="the python of bench/tensorflow/horovod-venv (the horovod group needs it)")
    p.add_argument("--horovod-unavailable", default="",
                   help="why there is no Horovod venv (printed in the table instead of its rows)")
    p.add_argument("--cases", default="", help="only these cases (comma-separated, e.g. step/mwms)")
    p.add_argument("--hosts", choices=["local", "netns"], default="local",
                   help="local: the ranks on 127.0.0.1; netns: rank i on the emulated host i + 1 of "
                        "bench/network/topo.sh (which must be up with N hosts), links shaped")
    p.add_argument("--bytes-per-pack", type=int, default=0,
                   help="CommunicationOptions(bytes_per_pack=...) of the MWMS groups' all-reduce (0: none)")
    p.add_argument("--group-timeout", type=int, default=600,
                   help="seconds for one group to start, and for one group's round")
    p.add_argument("--total-timeout", type=int, default=5400,
                   help="a rank's own bound on its life, should the launcher vanish")
    p.add_argument("--keep", default="",
                   help="groups whose ranks live through all rounds instead of starting for each turn (horovod "
                        "never: its ranks do not wait quietly); each rank holds 2-3.7 GB after a few rounds here")
    p.add_argument("--command", default="bench/tensorflow/bench_keras.py")
    p.add_argument("--rank", default="", help=argparse.SUPPRESS)
    p.add_argument("--launcher-pid", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--first-round", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        rank_main(args)
    else:
        sys.exit(launcher_main(args))


if __name__ == "__main__":
    main()
