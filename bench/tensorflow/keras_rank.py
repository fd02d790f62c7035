"""One rank of the Keras benchmark (bench_keras.py --rank GROUP): its side
of the launcher's files (ready, go, stop, its results per round) and its
main, which picks the group's runner (keras_runners.py) and serves rounds
until told to stop."""
from __future__ import annotations

import gc
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import rounds as rd
from keras_groups import GROUPS, HOROVOD_GROUP
from keras_runners import horovod_runner, mwms_runner, ringmaster_runner, single_runner


class Rank:
    def __init__(self, group, args):
        self.group, self.args = group, args
        if group == HOROVOD_GROUP:
            self.rank = int(os.environ["HOROVOD_RANK"])  # set by horovodrun
        else:
            self.rank = int(json.loads(os.environ.get("TF_CONFIG", '{"task":{"index":0}}'))["task"]["index"])
        self.size = GROUPS[group][0]
        self.round = args.first_round
        self.results = []
        self.out = Path(args.out)

    def record(self, case, times, correct=None):
        import tensorflow as tf
        self.results.append({"case": case, "rank": self.rank, "size": self.size, "round": self.round,
                             "times_s": times, "tf_version": tf.__version__, "correct": correct})
        print(f"[{self.group} rank {self.rank} round {self.round}] {case}: median "
              f"{statistics.median(times[self.args.warmup:]) * 1e3:.1f} ms", file=sys.stderr, flush=True)

    def signal_file(self, name, text=""):
        """Writes DIR/name at once (a rename), for the launcher to see."""
        tmp = self.out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, self.out / name)

    def wait_for_round(self):
        """True when the launcher says go for this round, False when it says
        stop (or is gone)."""
        go = self.out / f"go-{self.group}-{self.round}"
        stops = (self.out / "stop", self.out / f"stop-{self.group}")
        while True:
            if go.exists():
                return True
            if any(f.exists() for f in stops):
                return False
            try:
                os.kill(self.args.launcher_pid, 0)
            except OSError:
                return False
            time.sleep(0.05)

    def serve(self, run_case, cases, barrier):
        """Ready, then one pass over the cases per round until told to stop."""
        self.signal_file(f"ready-{self.group}-{self.rank}")
        while self.wait_for_round():
            self.results = []
            for case in rd.rotated(cases, self.round):
                run_case(case)
                gc.collect()
            if barrier:
                barrier()
            self.signal_file(f"rank-{self.group}-{self.rank}-r{self.round}.json", json.dumps(self.results))
            self.round += 1


def rank_main(args):
    # A bound of its own, should the launcher be killed without reaping it.
    signal.alarm(args.total_timeout + 60)
    r = Rank(args.rank, args)
    cases = GROUPS[args.rank][2]
    if args.cases:
        cases = [c for c in cases if c in args.cases.split(",")]
    if args.rank in ("mwms", "rm-mwms"):
        run_case, barrier = mwms_runner(r, ours=args.rank == "rm-mwms")
    elif args.rank == HOROVOD_GROUP:
        run_case, barrier = horovod_runner(r)
    elif args.rank == "single":
        run_case, barrier = single_runner(r)
    else:
        run_case, barrier = ringmaster_runner(r)
    r.serve(run_case, cases, barrier)
    print(json.dumps({"group": args.rank, "rank": r.rank, "rounds": r.round, "done": True}), flush=True)
    # TensorFlow's collective runtime can hang at interpreter exit; the
    # results are written, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
