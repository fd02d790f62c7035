#!/usr/bin/env python3
"""Runs Horovod's own TensorFlow tests and examples against ringmaster.tensorflow.

Not part of CI: Horovod's tests are in its source tree, not on a package
registry. Run it by hand against a Horovod checkout (or its git mirror), in
the TensorFlow venv that has the ringmaster wheel:

    upstream.py --horovod ~/src/horovod [-n 2] [-n 3] \\
                [--files test_tensorflow.py,test_tensorflow2_keras.py] \\
                [--examples] [--junit-dir DIR] [--per-case] [-k EXPR]
    upstream.py --horovod-git /path/to/horovod.git --ref v0.28.1 ...

Each test file is copied with base_test_tensorflow.py (into test/parallel/)
and test/utils/common.py, exactly as in Horovod's tree, into a temporary
directory; ONLY import lines are rewritten (REWRITES below; each rewrite is
reported). launch.py then runs N members of

    python -m pytest -p no:cacheprovider -rA -v --junitxml=DIR/rank<R>.xml FILE

as one Ringmaster job (a collective stuck for --timeout-seconds fails, the
whole run is bounded by --wall-timeout). Each member also loads a small
pytest plugin (this harness's, written to the temporary directory) that
appends every case's start and outcome to DIR/rank<R>.progress as it
happens: when a member dies or the run is stopped before pytest writes its
junit, the outcomes so far and the case that was running are still known.
Cases that no member started (the run died first) are run again in a new
launch, up to --max-relaunches times.

The report: every case's outcome on every rank, a summary per file and N
(cases passed on every rank / cases counted; cases that need a GPU or MPI
are not counted: EXCLUDE_RULES below) and each failure's first error line.
It is also written to --out (tab-separated; default under /tmp).

--examples runs examples/tensorflow2/tensorflow2_keras_mnist.py and
tensorflow2_mnist.py with the import rewritten, MNIST replaced by a local
.npz made from scikit-learn's digits (8x8 upscaled to 28x28; nothing is
downloaded) and the step counts reduced (EXAMPLE_REWRITES); pass = exit 0
on every member.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import launch  # noqa: E402  (tests/python/horovod/launch.py)

DEFAULT_FILES = ["test_tensorflow.py", "test_tensorflow2_keras.py"]
EXAMPLES = ["tensorflow2_keras_mnist.py", "tensorflow2_mnist.py"]
DEPS_DIR = Path(os.environ.get("RINGMASTER_UPSTREAM_DEPS", Path.home() / ".cache/ringmaster/upstream-deps"))
# Modules Horovod's test files import that are neither TensorFlow's nor ours.
# Missing ones are pip-installed into DEPS_DIR (not into the venv).
TEST_DEPS = {"mock": "mock", "parameterized": "parameterized", "cloudpickle": "cloudpickle",
             "packaging": "packaging"}

# Import rewrites: (pattern on an import line, replacement, why). Applied in
# order, only to lines that start with `import` or `from` (so strings such
# as common.py's mock.patch("horovod.runner...") targets stay as they are).
REWRITES: List[Tuple[str, str, str]] = [
    (r"\bhorovod\.tensorflow\.keras\b", "ringmaster.tensorflow.keras", "the API under test"),
    (r"\bhorovod\.tensorflow\b", "ringmaster.tensorflow", "the API under test"),
    (r"\bhorovod\.keras\b", "ringmaster.keras", "the API under test"),
    # Horovod's internal helpers the test files import: Horovod is not
    # installed, so they come from this harness's _upstream_shim module.
    (r"^(\s*)from\s+horovod\.common\.util\s+import\s+", r"\1from _upstream_shim import ",
     "Horovod-internal helper (not installed): harness shim"),
    (r"^(\s*)from\s+horovod\.runner\.util\.threads\s+import\s+", r"\1from _upstream_shim import ",
     "Horovod-internal helper (not installed): harness shim"),
    (r"^(\s*)from\s+horovod\.runner\.common\.util\.env\s+import\s+", r"\1from _upstream_shim import ",
     "Horovod-internal helper (not installed): harness shim"),
    # The examples' `import horovod` serves only horovod.run(...), on a path
    # (argv of 4) that launch.py never takes.
    (r"^(\s*)import\s+horovod\s*$", r"\1import _upstream_shim as horovod",
     "only used by horovod.run(), which launch.py replaces"),
]

# Cases not counted: they need a GPU or MPI, which this harness never has.
# A case is excluded when its name or the reason it was skipped matches.
EXCLUDE_RULES: List[Tuple[str, str, str]] = [
    ("name", r"(^|_)gpu(_|$)", "name has a 'gpu' word (test_*_gpu, *_gpu_*, test_gpu_required)"),
    ("name", r"(^|_)multi_gpu(_|$)", "name has 'multi_gpu'"),
    ("name", r"(^|_)(cuda|nccl|mpi)(_|$)", "name has a 'cuda', 'nccl' or 'mpi' word"),
    ("reason", r"\b(GPU|GPUs|CUDA|NCCL|MPI|mpi4py|HOROVOD_GPU\w*)\b", "skip reason mentions GPU/CUDA/NCCL/MPI"),
]

# Example rewrites: (example, pattern, replacement, why), beyond REWRITES.
EXAMPLE_REWRITES: List[Tuple[str, str, str, str]] = [
    ("*", r"tf\.keras\.datasets\.mnist\.load_data\((?:[^()]|\([^()]*\))*\)", "_upstream_shim.load_mnist()",
     "MNIST from a local .npz synthesized from scikit-learn's digits (nothing downloaded)"),
    ("tensorflow2_keras_mnist.py", r"steps_per_epoch=500 // hvd\.size\(\)",
     "steps_per_epoch={keras_steps} // hvd.size()", "fewer steps per epoch (2 shared cores)"),
    ("tensorflow2_keras_mnist.py", r"epochs=24\b", "epochs={keras_epochs}", "fewer epochs (2 shared cores)"),
    ("tensorflow2_mnist.py", r"dataset\.take\(10000 // hvd\.size\(\)\)",
     "dataset.take({mnist_steps} // hvd.size())", "fewer steps (2 shared cores)"),
]

SHIM = '''"""Written by tests/python/horovod/upstream.py: stand-ins for the few
Horovod-internal helpers Horovod's test files and examples import (Horovod
is not installed), and the examples' local MNIST."""
import os
import threading

from packaging import version as _version


def is_version_greater_equal_than(ver, min_ver):
    """True when ver >= min_ver (PEP 440; TensorFlow's "-tf" suffixes as local versions)."""
    return _version.parse(str(ver).replace("-tf", "+tf")) >= _version.parse(str(min_ver).replace("-tf", "+tf"))


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Runs target(*args) in a started thread; returns the thread."""
    def run():
        try:
            target(*args)
        except BaseException:
            if not silent:
                raise
    t = threading.Thread(target=run, name=name, daemon=daemon)
    t.start()
    return t


def get_env_rank_and_size():
    """(rank, size) from the variables launch.py exports (horovodrun's), else None."""
    for rank_var, size_var in (("HOROVOD_RANK", "HOROVOD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return None


def run(*args, **kwargs):
    raise RuntimeError("horovod.run is not available: start the example with launch.py")


def load_mnist(path=None):
    """The shape of tf.keras.datasets.mnist.load_data(): from $UPSTREAM_MNIST_NPZ."""
    import numpy as np
    with np.load(os.environ["UPSTREAM_MNIST_NPZ"]) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
'''

PLUGIN = '''"""Written by tests/python/horovod/upstream.py: appends each case's start
and outcome to $UPSTREAM_PROGRESS_DIR/rank<HOROVOD_RANK>.progress as it
happens (one JSON object a line, flushed), so a member that dies leaves them."""
import json
import os

_f = None


def _emit(**kv):
    global _f
    if _f is None:
        d = os.environ.get("UPSTREAM_PROGRESS_DIR")
        if not d:
            return
        _f = open(os.path.join(d, "rank%s.progress" % os.environ.get("HOROVOD_RANK", "x")), "a")
    _f.write(json.dumps(kv) + "\\n")
    _f.flush()


def pytest_collection_finish(session):
    _emit(event="collected", cases=[i.nodeid for i in session.items])


def pytest_runtest_logstart(nodeid, location):
    _emit(event="start", case=nodeid)


def pytest_runtest_logreport(report):
    msg = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash is not None else str(report.longrepr)
    elif report.skipped and isinstance(report.longrepr, tuple):
        msg = str(report.longrepr[2])
    _emit(event="report", case=report.nodeid, when=report.when, outcome=report.outcome, message=msg)


def pytest_sessionfinish(session, exitstatus):
    _emit(event="finish", status=int(exitstatus))
'''


# ---------------------------------------------------------------- sources

def fetch_sources(args, tmp: Path) -> Path:
    """A directory with Horovod's test/ and examples/ (a copy, or git archive of --ref)."""
    if args.horovod:
        src = Path(args.horovod).resolve()
        if not (src / "test" / "parallel").is_dir():
            sys.exit(f"upstream.py: {src} has no test/parallel (not a Horovod source tree)")
        return src
    out = tmp / "horovod-src"
    out.mkdir()
    paths = ["test/parallel", "test/utils", "examples/tensorflow2"]
    arch = subprocess.run(["git", "-C", args.horovod_git, "archive", args.ref, *paths],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if arch.returncode != 0:
        sys.exit(f"upstream.py: git archive {args.ref} failed: {arch.stderr.decode(errors='replace')}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=arch.stdout, check=True, timeout=300)
    return out


def rewrite_imports(text: str, extra: Sequence[Tuple[str, str, str]] = ()) -> Tuple[str, List[str]]:
    """Rewrites import lines per REWRITES (and `extra`, applied to every
    line); returns the text and a note per changed line."""
    notes = []
    out = []
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\n")
        new = body
        why = []
        if re.match(r"\s*(import|from)\s", body):
            for pat, repl, reason in REWRITES:
                changed = re.sub(pat, repl, new)
                if changed != new:
                    new = changed
                    why.append(reason)
        for pat, repl, reason in extra:
            changed = re.sub(pat, repl, new)
            if changed != new:
                new = changed
                why.append(reason)
        if new != body:
            notes.append(f"line {no}: {body.strip()!r} -> {new.strip()!r} ({'; '.join(dict.fromkeys(why))})")
        out.append(new + line[len(body):])
    return "".join(out), notes


def stage_tests(src: Path, stage: Path, name: str) -> Tuple[Path, Dict[str, List[str]]]:
    """Copies Horovod's layout (test/parallel/FILE, base_test_tensorflow.py,
    test/utils/common.py) into stage, imports rewritten; returns FILE's path
    and the rewrites per file."""
    par, utl = stage / "test" / "parallel", stage / "test" / "utils"
    par.mkdir(parents=True, exist_ok=True)
    utl.mkdir(parents=True, exist_ok=True)
    notes = {}
    for rel in [f"test/parallel/{name}", "test/parallel/base_test_tensorflow.py", "test/utils/common.py"]:
        s = src / rel
        if not s.is_file():
            if rel.endswith(name):
                sys.exit(f"upstream.py: no {rel} in {src}")
            continue
        text, n = rewrite_imports(s.read_text())
        (stage / rel).write_text(text)
        notes[rel] = n
    (par / "_upstream_shim.py").write_text(SHIM)
    (par / "_upstream_progress.py").write_text(PLUGIN)
    return par / name, notes


def ensure_deps(python: str) -> Optional[str]:
    """Installs the test files' third-party imports the venv lacks into
    DEPS_DIR; returns DEPS_DIR when it is needed on PYTHONPATH."""
    missing = []
    for mod, pkg in TEST_DEPS.items():
        env = dict(os.environ, PYTHONPATH=str(DEPS_DIR))
        if subprocess.run([python, "-c", f"import {mod}"], env=env, capture_output=True, timeout=120).returncode:
            missing.append(pkg)
    if missing:
        print(f"upstream.py: installing {', '.join(missing)} into {DEPS_DIR} (the test files import them)",
              flush=True)
        p = subprocess.run([python, "-m", "pip", "install", "--quiet", "--target", str(DEPS_DIR), *missing],
                           capture_output=True, text=True, timeout=600)
        if p.returncode:
            sys.exit(f"upstream.py: pip install {' '.join(missing)} failed:\n{p.stderr[-2000:]}")
    return str(DEPS_DIR) if DEPS_DIR.is_dir() else None


# ---------------------------------------------------------------- outcomes

@dataclass
class Case:
    nodeid: str
    outcomes: Dict[int, str] = field(default_factory=dict)   # rank -> passed/failed/error/skipped/died/not run
    messages: Dict[int, str] = field(default_factory=dict)   # rank -> first error line / skip reason

    @property
    def name(self) -> str:
        return self.nodeid.split("::")[-1].split("[")[0]

    @property
    def label(self) -> str:
        """Class::case (base classes imported into the module are collected too)."""
        return self.nodeid.split("::", 1)[-1]


def excluded(case: Case) -> Optional[str]:
    for kind, pat, why in EXCLUDE_RULES:
        if kind == "name" and re.search(pat, case.name, re.I):
            return why
        if kind == "reason":
            for r, o in case.outcomes.items():
                if o == "skipped" and re.search(pat, case.messages.get(r, "")):
                    return why
    return None


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def read_progress(path: Path):
    """(collected, {case: (outcome, message)}, started) from one rank's progress file."""
    collected: List[str] = []
    done: Dict[str, Tuple[str, str]] = {}
    started: List[str] = []
    if not path.is_file():
        return collected, done, started
    for line in path.read_text(errors="replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "collected":
            collected = ev["cases"]
        elif ev.get("event") == "start":
            started.append(ev["case"])
        elif ev.get("event") == "report":
            c, when, out, msg = ev["case"], ev["when"], ev["outcome"], ev.get("message", "")
            prev = done.get(c)
            if when == "call" or (when == "setup" and out != "passed"):
                o = {"passed": "passed", "failed": "failed" if when == "call" else "error",
                     "skipped": "skipped"}[out]
                if prev is None or prev[0] == "passed":
                    done[c] = (o, first_line(msg))
            elif when == "teardown" and out == "failed":
                done[c] = ("error", first_line(msg))
    return collected, done, started


def read_junit(path: Path, file_stem: str) -> Dict[str, Tuple[str, str]]:
    """{nodeid: (outcome, message)} from one rank's junit (nodeid as pytest names it)."""
    out: Dict[str, Tuple[str, str]] = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return out
    for tc in root.iter("testcase"):
        cls = tc.get("classname", "")
        parts = cls.split(".")
        # classname "test.parallel.test_tensorflow.TensorFlowTests" (rootdir-relative module + class)
        klass = parts[-1] if len(parts) > 1 else ""
        nodeid = f"{file_stem}.py::{klass}::{tc.get('name')}" if klass else f"{file_stem}.py::{tc.get('name')}"
        outcome, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                msg = first_line(child.get("message") or child.text or "")
                break
        out[nodeid] = (outcome, msg)
    return out


# ---------------------------------------------------------------- running

@dataclass
class FileRun:
    file: str
    n: int
    cases: Dict[str, Case] = field(default_factory=dict)
    launches: List[str] = field(default_factory=list)       # one line per launch: exit code, what happened
    notes: Dict[str, List[str]] = field(default_factory=dict)


def member_command(test_file: Path, rundir: Path, selection: Sequence[str], extra_pytest: Sequence[str]) -> List[str]:
    # "$RINGMASTER_PYTHON": launch.py sets it to its own interpreter; the
    # rank is known only inside the member (launch.py --member exported it).
    pytest_args = ["-p", "no:cacheprovider", "-p", "_upstream_progress", "-rA", "-v",
                   *extra_pytest, *(selection or [str(test_file)])]
    script = ('exec "$RINGMASTER_PYTHON" -m pytest --junitxml="$0/rank$HOROVOD_RANK.xml" "$@"')
    return ["sh", "-c", script, str(rundir), *pytest_args]


def _job_name(test_file: str, n: int) -> str:
    """A job name within the 40 characters a DNS label of ours may have:
    test_tensorflow_process_sets_dynamic.py, 3 -> hvd-tf-process-sets-dynamic-np3."""
    stem = Path(test_file).stem.replace("test_", "", 1).replace("tensorflow", "tf").replace("_", "-")
    suffix = f"-np{n}"
    return ("hvd-" + stem)[:40 - len(suffix)].rstrip("-") + suffix


def run_file(args, src: Path, stage_root: Path, name: str, n: int, junit_root: Path, deps: Optional[str]) -> FileRun:
    stage = stage_root / f"{Path(name).stem}-np{n}"
    test_file, notes = stage_tests(src, stage, name)
    fr = FileRun(name, n, notes=notes)
    par = test_file.parent
    ranks = list(range(n))
    pending: Optional[List[str]] = None     # None: the whole file (or -k)
    extra = ["-k", args.k] if args.k else []
    attempt = 0
    collected: List[str] = []
    per_case_list: Optional[List[str]] = None
    if args.per_case:
        per_case_list = collect(args, par, test_file, deps)
        pending = list(per_case_list)
    while True:
        attempt += 1
        if per_case_list is not None:
            if not pending:
                break
            selection = [pending.pop(0)]
        else:
            selection = pending or []
        rundir = junit_root / Path(name).stem / f"np{n}" / f"launch{attempt:03d}"
        rundir.mkdir(parents=True, exist_ok=True)
        env = {"UPSTREAM_PROGRESS_DIR": str(rundir), "PYTHONPATH": os.pathsep.join(filter(None, [str(par), deps])),
               "CUDA_VISIBLE_DEVICES": "", **args.env}
        sel_args = [f"{test_file.name}::{c.split('::', 1)[1]}" if "::" in c else c for c in selection]
        res = launch.run(member_command(test_file, rundir, sel_args, extra), n, chief=args.chief,
                         timeout_seconds=args.timeout_seconds, env=env, wall_timeout=args.wall_timeout,
                         cwd=str(par), echo=sys.stdout if args.verbose else None,
                         name=_job_name(name, n))
        (rundir / "output.log").write_text(res.output)
        started_any: set = set()
        last_started: Dict[int, str] = {}
        for r in ranks:
            col, done, started = read_progress(rundir / f"rank{r}.progress")
            if col and not collected:
                collected = col
            started_any.update(started)
            junit = read_junit(rundir / f"rank{r}.xml", test_file.stem)
            for c, (o, m) in {**done, **junit}.items():
                case = fr.cases.setdefault(c, Case(c))
                case.outcomes[r], case.messages[r] = o, m
            for c in started:
                case = fr.cases.setdefault(c, Case(c))
                if r not in case.outcomes:
                    case.outcomes[r], case.messages[r] = "died", "the member died or was stopped in this case"
                    last_started[r] = c
        what = "timed out (wall-clock bound)" if res.timed_out else f"exit {res.returncode}"
        tail = [l for l in res.output.splitlines() if l.startswith("[ringmaster] verdict") or "ReplicaFailed" in l]
        died = "; ".join(f"rank {r} was in {c}" for r, c in sorted(last_started.items()))
        fr.launches.append(f"launch {attempt} ({len(selection) or 'all'} cases): {what}"
                           + (f"; {died}" if died else "") + (f"; {tail[-1]}" if tail else ""))
        if per_case_list is not None:
            for c in selection:
                fr.cases.setdefault(c, Case(c))
            continue
        # The whole run: relaunch what no member started (the group died first).
        never = [c for c in collected if c not in started_any and not fr.cases.get(c, Case(c)).outcomes]
        if not collected or not never or attempt > args.max_relaunches:
            for c in never:
                fr.cases.setdefault(c, Case(c))
            break
        print(f"upstream.py: {name} np{n}: the run ended with {len(never)} cases not started; relaunching them",
              flush=True)
        pending = never
    for c in collected:
        fr.cases.setdefault(c, Case(c))
    for case in fr.cases.values():
        for r in ranks:
            case.outcomes.setdefault(r, "not run")
    return fr


def collect(args, par: Path, test_file: Path, deps: Optional[str]) -> List[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(par), deps])), CUDA_VISIBLE_DEVICES="",
               TF_CPP_MIN_LOG_LEVEL="2", **args.env)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", test_file.name]
    if args.k:
        cmd += ["-k", args.k]
    p = subprocess.run(cmd, cwd=par, env=env, capture_output=True, text=True, timeout=600)
    cases = [l.strip() for l in p.stdout.splitlines() if "::" in l and not l.startswith(" ")]
    if not cases:
        sys.exit(f"upstream.py: collecting {test_file.name} found nothing:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return cases


# ---------------------------------------------------------------- examples

def make_mnist_npz(path: Path) -> None:
    """MNIST's shape and dtypes from scikit-learn's digits: 8x8 (0..16) ->
    24x24 by 3x3 blocks, padded to 28x28, scaled to 0..255 uint8."""
    import numpy as np
    from sklearn.datasets import load_digits
    d = load_digits()
    img = np.kron(d.images, np.ones((1, 3, 3)))
    img = np.pad(img, ((0, 0), (2, 2), (2, 2)))
    img = np.clip(np.round(img * (255.0 / 16.0)), 0, 255).astype(np.uint8)
    lab = d.target.astype(np.uint8)
    split = int(len(img) * 0.8)
    np.savez(path, x_train=img[:split], y_train=lab[:split], x_test=img[split:], y_test=lab[split:])


def run_examples(args, src: Path, stage_root: Path, out_root: Path) -> List[Tuple[str, int, str, List[str], str]]:
    results = []
    stage = stage_root / "examples"
    stage.mkdir(parents=True, exist_ok=True)
    npz = stage / "mnist-digits.npz"
    subprocess.run([sys.executable, "-c", f"import upstream; upstream.make_mnist_npz(__import__('pathlib').Path({str(npz)!r}))"],
                   cwd=str(HERE), check=True, timeout=300,
                   env=dict(os.environ, PYTHONPATH=str(HERE)))
    (stage / "_upstream_shim.py").write_text(SHIM)
    fmt = {"keras_steps": args.example_steps, "keras_epochs": args.example_epochs, "mnist_steps": args.example_steps}
    for ex in EXAMPLES:
        s = src / "examples" / "tensorflow2" / ex
        if not s.is_file():
            results.append((ex, 0, "missing", [], ""))
            continue
        extra = [(p, r.format(**fmt), why) for e, p, r, why in EXAMPLE_REWRITES if e in ("*", ex)]
        text, notes = rewrite_imports(s.read_text(), extra)
        if "_upstream_shim.load_mnist" in text and not re.search(r"^import _upstream_shim\s*$", text, re.M):
            text = "import _upstream_shim  # upstream.py: the local MNIST\n" + text
            notes.insert(0, "line 1: added 'import _upstream_shim' (the local MNIST loader)")
        (stage / ex).write_text(text)
        for n in args.n:
            env = {"UPSTREAM_MNIST_NPZ": str(npz), "PYTHONPATH": str(stage), "CUDA_VISIBLE_DEVICES": "", **args.env}
            res = launch.run(["python", ex], n, chief=args.chief, timeout_seconds=args.timeout_seconds, env=env,
                             wall_timeout=args.wall_timeout, cwd=str(stage),
                             echo=sys.stdout if args.verbose else None,
                             name=f"hvd-example-np{n}")
            logdir = out_root / "examples"
            logdir.mkdir(parents=True, exist_ok=True)
            log = logdir / f"{Path(ex).stem}-np{n}.log"
            log.write_text(res.output)
            err = ""
            if res.returncode != 0:
                errs = [l for l in res.output.splitlines()
                        if re.search(r"(Error|Exception|error:)", l) and not l.startswith("[ringmaster]")]
                err = errs[-1] if errs else (res.output.splitlines() or [""])[-1]
            status = "passed" if res.returncode == 0 else ("timed out" if res.timed_out else f"failed (exit {res.returncode})")
            results.append((ex, n, status, notes, err))
            print(f"example {ex} np{n}: {status} ({res.seconds:.0f}s; log {log})" + (f"\n    {err}" if err else ""),
                  flush=True)
    return results


# ---------------------------------------------------------------- report

def report(runs: List[FileRun], out: Path) -> None:
    rows = []
    for fr in runs:
        print(f"\n=== {fr.file}, N = {fr.n} ===")
        for rel, notes in fr.notes.items():
            for note in notes:
                print(f"  rewrite {rel} {note}")
        for line in fr.launches:
            print(f"  {line}")
        width = max([len(c.label) for c in fr.cases.values()] + [10])
        print(f"  {'case'.ljust(width)}  " + "  ".join(f"rank{r:<4}" for r in range(fr.n)) + "  note")
        counted = passed = 0
        skipped_other = 0
        failures = []
        for nodeid in sorted(fr.cases, key=lambda c: list(fr.cases).index(c)):
            case = fr.cases[nodeid]
            ex = excluded(case)
            outs = [case.outcomes.get(r, "not run") for r in range(fr.n)]
            ok = all(o == "passed" for o in outs)
            if ex is None:
                counted += 1
                passed += ok
                if all(o == "skipped" for o in outs):
                    skipped_other += 1
            note = f"excluded: {ex}" if ex else ""
            if not ok and ex is None:
                msg = next((case.messages[r] for r in range(fr.n)
                            if case.outcomes.get(r) in ("failed", "error", "died") and case.messages.get(r)), "")
                if not msg:
                    msg = next((case.messages[r] for r in range(fr.n) if case.messages.get(r)), "")
                note = msg
                failures.append((case.label, msg))
            print(f"  {case.label.ljust(width)}  " + "  ".join(f"{o:<8}" for o in outs) + f"  {note}")
            rows.append([fr.file, str(fr.n), case.label, *[f"rank{r}={o}" for r, o in enumerate(outs)],
                         "excluded" if ex else ("PASS" if ok else "FAIL"), (ex or note).replace("\t", " ")])
        fr.summary = (passed, counted, skipped_other, len(fr.cases) - counted)  # type: ignore[attr-defined]
    print("\n=== summary (cases that need a GPU or MPI are not counted) ===")
    for fr in runs:
        p, c, s, x = fr.summary  # type: ignore[attr-defined]
        print(f"  {fr.file:32s} N={fr.n}: passed on every rank {p}/{c}"
              f" ({s} skipped on every rank for other reasons; {x} excluded as GPU/MPI)")
    with open(out, "w") as f:
        f.write("# file\tN\tcase\tper-rank outcomes...\tverdict\tnote\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"\nper-case outcomes: {out}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    srcg = p.add_mutually_exclusive_group(required=True)
    srcg.add_argument("--horovod", metavar="DIR", help="a Horovod source tree")
    srcg.add_argument("--horovod-git", metavar="REPO", help="a Horovod git repository (or mirror); see --ref")
    p.add_argument("--ref", default="v0.28.1", help="with --horovod-git: the tag or commit (default v0.28.1)")
    p.add_argument("-n", type=int, action="append", help="members (repeatable; default 2)")
    p.add_argument("--files", default=",".join(DEFAULT_FILES), help="test/parallel files, comma-separated ('' for none)")
    p.add_argument("--examples", action="store_true", help="also run examples/tensorflow2's two MNIST examples")
    p.add_argument("--junit-dir", default=None, help="where each launch's rank<R>.xml, progress and output go "
                   "(default: a new directory under /tmp)")
    p.add_argument("--out", default=None, help="the per-case table, tab-separated (default JUNIT_DIR/outcomes.tsv)")
    p.add_argument("--per-case", action="store_true", help="each case in a launch of its own (slow; isolates failures)")
    p.add_argument("-k", default=None, help="pytest -k expression: only these cases")
    p.add_argument("--chief", action="store_true", help="a Chief and N-1 workers (default: N workers)")
    p.add_argument("--timeout-seconds", type=int, default=30,
                   help="communication.timeoutSeconds: a collective stuck this long fails (default 30)")
    p.add_argument("--wall-timeout", type=float, default=1800,
                   help="bound on one launch in seconds (default 1800)")
    p.add_argument("--max-relaunches", type=int, default=20,
                   help="relaunches of the cases a dead run never started (default 20)")
    p.add_argument("--legacy-keras", action="store_true", help="TF_USE_LEGACY_KERAS=1 (tf_keras) in every member")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="set in every member")
    p.add_argument("--example-steps", type=int, default=64, help="examples: steps (per epoch for Keras), before / size")
    p.add_argument("--example-epochs", type=int, default=3, help="the Keras example's epochs (default 3)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo every member's output")
    args = p.parse_args(argv)
    args.n = args.n or [2]
    env = {}
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    if args.legacy_keras:
        env["TF_USE_LEGACY_KERAS"] = "1"
    args.env = env
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    junit_root = Path(args.junit_dir or f"/tmp/ringmaster-upstream-{stamp}").resolve()
    junit_root.mkdir(parents=True, exist_ok=True)
    out = Path(args.out).resolve() if args.out else junit_root / "outcomes.tsv"
    with tempfile.TemporaryDirectory(prefix="rm-upstream-") as tmp:
        tmp = Path(tmp)
        src = fetch_sources(args, tmp)
        deps = ensure_deps(sys.executable)
        runs = []
        files = [f for f in args.files.split(",") if f]
        for name in files:
            for n in args.n:
                print(f"upstream.py: {name} with N = {n} (junit and logs under {junit_root})", flush=True)
                runs.append(run_file(args, src, tmp / "stage", name, n, junit_root, deps))
        if runs:
            report(runs, out)
        ex_results = run_examples(args, src, tmp / "stage", junit_root) if args.examples else []
        if ex_results:
            print("\n=== examples (pass = exit 0 on every member) ===")
            shown = set()
            for ex, n, status, notes, err in ex_results:
                if ex not in shown:
                    shown.add(ex)
                    for note in notes:
                        print(f"  rewrite {ex} {note}")
            for ex, n, status, notes, err in ex_results:
                print(f"  {ex:32s} N={n}: {status}" + (f"  {err}" if err else ""))
            with open(out, "a") as f:
                for ex, n, status, notes, err in ex_results:
                    f.write(f"examples/tensorflow2/{ex}\t{n}\t(example)\t\t"
                            f"{'PASS' if status == 'passed' else 'FAIL'}\t{status} {err}\n")
    all_ok = all(fr.summary[0] == fr.summary[1] for fr in runs) and all(  # type: ignore[attr-defined]
        s == "passed" for _, _, s, _, _ in ex_results)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
