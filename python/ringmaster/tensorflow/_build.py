"""Finds, or builds, and loads the TensorFlow op library of
ringmaster.tensorflow.

The package carries op libraries compiled ahead of time for the TensorFlow
releases users have (``_prebuilt/tf-MAJOR.MINOR/``, made by scripts/tf-ops):
the one matching ``tf.__version__``'s major.minor is loaded, and no compiler
is needed. ``RINGMASTER_TF_PREBUILT=0`` skips them. Any other TensorFlow
(or a prebuilt op that TensorFlow refuses) builds one at first import,
once per TensorFlow version, compiler flags, op source and libringmaster.

The library is compiled against the TensorFlow that is imported and the
libringmaster that ``import ringmaster`` loaded, into a cache directory
``~/.cache/ringmaster/tf-ops/<key>/`` (``$RINGMASTER_TF_OPS_CACHE`` overrides the
root; ``$XDG_CACHE_HOME`` is honoured). The build is atomic (compiled to a
temporary name, then renamed) and serialised by a lock file, so processes
that start together (the ranks of a job) build it once.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

_OPS_DIR = Path(__file__).resolve().parent / "_ops"
_PREBUILT_DIR = Path(__file__).resolve().parent / "_prebuilt"
_LIB_NAME = "ringmaster_ops.so"
_BUILD_TIMEOUT_S = 1200
_module: Any = None
_loaded: Optional[Path] = None


class OpBuildError(RuntimeError):
    """The TensorFlow op library could not be compiled or loaded."""


def cache_root() -> Path:
    env = os.environ.get("RINGMASTER_TF_OPS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ringmaster" / "tf-ops"


def prebuilt_versions() -> List[str]:
    """The TensorFlow releases ("2.21") this package carries a prebuilt op for."""
    found = [p.name[len("tf-"):] for p in _PREBUILT_DIR.glob("tf-*") if (p / _LIB_NAME).is_file()]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()))


def _prebuilt_enabled() -> bool:
    return os.environ.get("RINGMASTER_TF_PREBUILT", "1") != "0"


def prebuilt_path(tf_version: str) -> Optional[Path]:
    """The prebuilt op for this TensorFlow version's major.minor, if the package has one."""
    minor = ".".join(tf_version.split(".")[:2])
    path = _PREBUILT_DIR / f"tf-{minor}" / _LIB_NAME
    return path if path.is_file() else None


def _sources() -> List[Path]:
    return sorted(_OPS_DIR.glob("*.cc"))


def _compiler() -> str:
    return os.environ.get("CXX") or shutil.which("g++") or "g++"


def _command(tf: Any, ringmaster: Any, output: str) -> List[str]:
    lib = Path(ringmaster.library_path()).resolve()
    return ([_compiler(), "-std=c++17", "-shared", "-fPIC", "-O2"]
            + list(tf.sysconfig.get_compile_flags())
            + ["-I" + str(ringmaster.include_dir()), "-I" + str(_OPS_DIR)] + [str(p) for p in _sources()]
            + ["-o", output]
            + list(tf.sysconfig.get_link_flags())
            + [str(lib), "-Wl,-rpath," + str(lib.parent)])


def _key(tf: Any, ringmaster: Any) -> str:
    lib = Path(ringmaster.library_path()).resolve()
    h = hashlib.sha256()
    for part in (tf.__version__, sys.version, " ".join(_command(tf, ringmaster, "OUT")),
                 str(lib), str(lib.stat().st_mtime_ns)):
        h.update(part.encode() + b"\0")
    for path in sorted(_OPS_DIR.iterdir()):  # the sources and the headers they share
        if path.suffix in (".cc", ".h"):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:  # a failed link removes its output itself
        pass


def library_path() -> Path:
    """The op library for this TensorFlow and libringmaster; builds it if needed."""
    import tensorflow as tf

    import ringmaster

    root = cache_root()
    key = _key(tf, ringmaster)
    target = root / key / _LIB_NAME
    if target.exists():
        return target
    compiler = _compiler()
    if not shutil.which(compiler):
        have = ", ".join(prebuilt_versions()) or "none"
        if not prebuilt_path(tf.__version__):
            why = f"this package has no prebuilt op for TensorFlow {tf.__version__}"
        elif not _prebuilt_enabled():
            why = f"the prebuilt op for TensorFlow {tf.__version__} is turned off (RINGMASTER_TF_PREBUILT=0)"
        else:
            why = f"TensorFlow {tf.__version__} refused the prebuilt op"
        raise OpBuildError(f"ringmaster.tensorflow: {why} (prebuilt: {have}), and there is no C++ compiler to "
                           f"build one ('{compiler}' is not on PATH): install g++ (or set CXX), or use a "
                           f"TensorFlow the package was built for")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another rank may be building it right now
        try:
            if target.exists():
                return target
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=target.parent)
            os.close(fd)
            cmd = _command(tf, ringmaster, tmp)
            try:
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      timeout=_BUILD_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as e:
                _remove(tmp)
                raise OpBuildError(f"ringmaster.tensorflow: cannot build the op library for TensorFlow "
                                   f"{tf.__version__}: {e}\ncommand: {shlex.join(cmd)}") from e
            if proc.returncode != 0:
                _remove(tmp)
                tail = "\n".join(proc.stdout.splitlines()[-40:])
                raise OpBuildError(f"ringmaster.tensorflow: building the op library for TensorFlow "
                                   f"{tf.__version__} failed (exit {proc.returncode}).\n"
                                   f"command: {shlex.join(cmd)}\ncompiler output (tail):\n{tail}")
            (target.parent / "command.txt").write_text(shlex.join(cmd) + "\n")
            os.chmod(tmp, 0o755)  # mkstemp's 0600 survives the link: other users could not load it
            os.replace(tmp, target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def _framework_to_global_scope(tf: Any) -> None:
    """The prebuilt ops do not name libtensorflow_framework.so.2 (so the
    wheel needs nothing from outside itself): their TensorFlow symbols come
    from the copy TensorFlow has loaded, made visible to later libraries
    here (TensorFlow 2.16 loads it into a local scope only). RTLD_NOLOAD:
    never a second copy; if it is not loaded, the load below says so."""
    import ctypes

    lib = os.path.join(tf.sysconfig.get_lib(), "libtensorflow_framework.so.2")
    try:
        ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        pass


def load() -> Any:
    """Loads the op library (after ``import ringmaster``: libringmaster must
    already be loaded with RTLD_DEEPBIND so the op binds to that copy):
    the prebuilt one for this TensorFlow, else one built here."""
    global _module, _loaded
    if _module is not None:
        return _module
    import ringmaster  # noqa: F401  (first: loads libringmaster.so.N with DEEPBIND)
    import tensorflow as tf

    prebuilt = prebuilt_path(tf.__version__) if _prebuilt_enabled() else None
    refused = ""
    if prebuilt is not None:
        _framework_to_global_scope(tf)
        try:
            _module, _loaded = tf.load_op_library(str(prebuilt)), prebuilt
            return _module
        except Exception as e:  # a TensorFlow build whose ABI differs from its release's: build one instead
            refused = f" (TensorFlow refused the prebuilt {prebuilt}: {e})"
    try:
        path = library_path()
    except OpBuildError as e:
        raise OpBuildError(f"{e}{refused}") from e
    try:
        _module, _loaded = tf.load_op_library(str(path)), path
    except Exception as e:  # tf.errors.NotFoundError: a missing symbol, a wrong TensorFlow
        raise OpBuildError(f"ringmaster.tensorflow: cannot load {path} into TensorFlow {tf.__version__}: {e}. "
                           f"Remove {path.parent} to rebuild it.") from e
    return _module


def loaded_path() -> Optional[str]:
    """The op library loaded (prebuilt or built here); None before load()."""
    return None if _loaded is None else str(_loaded)
