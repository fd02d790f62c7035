"""What needs no group: options, errors, the package's files."""

from __future__ import annotations

import enum
import os
import re
import subprocess
import sys

import pytest

import ringmaster


def test_options_defaults_and_validation_name_the_field():
    o = ringmaster.CommunicationOptions()
    assert (o.bytes_per_pack, o.timeout_seconds, o.implementation) == (0, None, "AUTO")
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^bytes_per_pack: must be >= 0, got -1$"):
        ringmaster.CommunicationOptions(bytes_per_pack=-1)
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^timeout_seconds: "):
        ringmaster.CommunicationOptions(timeout_seconds=-0.5)
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^implementation: .*'FOO'"):
        ringmaster.CommunicationOptions(implementation="FOO")
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^bytes_per_pack: "):
        ringmaster.CommunicationOptions(bytes_per_pack="big")
    assert ringmaster.CommunicationOptions(implementation="nccl").implementation == "NCCL"
    # The engine's algorithm: settable from Python, by the C API's names or aliases.
    assert o.algorithm == "auto"
    assert ringmaster.CommunicationOptions(algorithm="RD").algorithm == "recursive_doubling"
    with pytest.raises(ringmaster.InvalidArgumentError,
                       match=r"^algorithm: unknown algorithm 'tree', expected one of auto, ring, "
                             r"recursive_doubling, halving_doubling$"):
        ringmaster.CommunicationOptions(algorithm="tree")


class Implementation(enum.Enum):  # as tf.distribute.experimental.CommunicationImplementation
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class TFOptions:
    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=Implementation.AUTO):
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class CollectiveHints:
    def __init__(self, bytes_per_pack=0, timeout_seconds=None):
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds


def test_from_any_accepts_tensorflow_shapes():
    from_any = ringmaster.CommunicationOptions.from_any
    assert from_any(None) == ringmaster.CommunicationOptions()
    ours = ringmaster.CommunicationOptions(bytes_per_pack=8)
    assert from_any(ours) is ours
    got = from_any(TFOptions(1024, 5, Implementation.RING))
    assert (got.bytes_per_pack, got.timeout_seconds, got.implementation) == (1024, 5.0, "RING")
    got = from_any(CollectiveHints(bytes_per_pack=32, timeout_seconds=1.5))
    assert (got.bytes_per_pack, got.timeout_seconds, got.implementation) == (32, 1.5, "AUTO")
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^bytes_per_pack: must be >= 0, got -3$"):
        from_any(CollectiveHints(bytes_per_pack=-3))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^options: "):
        from_any(42)
    # 0 / None / AUTO keep the job default (rm_options: RM_TIMEOUT_KEEP, AUTO = 0).
    assert ringmaster.CommunicationOptions(timeout_seconds=0)._to_c() == (0, -1.0, 0, 0)
    assert ringmaster.CommunicationOptions(7, 2.5, "NCCL", "halving_doubling")._to_c() == (7, 2.5, 2, 3)


def test_enum_tables_come_from_the_c_api():
    from ringmaster import _core
    assert _core.enum_names("reduce_op") == ["sum", "mean", "min", "max", "product"]
    assert _core.enum_names("implementation") == ["AUTO", "RING", "NCCL"]
    assert _core.enum_names("dtype")[2] == "float32"
    assert _core.parse_enum("reduce_op", "Prod", "op") == 4
    assert _core.TIMEOUT_KEEP == -1.0
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^op: unknown reduce op 'median'"):
        _core.parse_enum("reduce_op", "median", "op")


def test_errors_by_code():
    names = {1: "CancelledError", 2: "UnknownError", 3: "InvalidArgumentError",
             4: "DeadlineExceededError", 8: "ResourceExhaustedError", 9: "FailedPreconditionError", 10: "AbortedError",
             12: "UnimplementedError", 13: "InternalError", 14: "UnavailableError",
             16: "UnauthenticatedError"}
    for code, name in names.items():
        err = ringmaster.error_from_code(code, f"message {code}")
        assert type(err) is getattr(ringmaster, name)
        assert isinstance(err, ringmaster.RingmasterError) and isinstance(err, RuntimeError)
        assert err.code == code and str(err) == f"message {code}"
    odd = ringmaster.error_from_code(99, "odd")
    assert type(odd) is ringmaster.RingmasterError and odd.code == 99


def test_forming_without_tf_config_raises_not_hangs(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ringmaster.InvalidArgumentError, match="TF_CONFIG"):
        ringmaster.Communicator.from_environment()
    assert ringmaster.default_communicator() is None


def test_installed_files_and_paths():
    lib = ringmaster.library_path()
    assert os.path.isabs(lib) and re.fullmatch(r"libringmaster\.so\.[0-9]+", os.path.basename(lib)), lib
    assert os.path.isfile(lib) and not os.path.islink(lib)
    # The package imported is the installed one, not the source tree's.
    assert "site-packages" in ringmaster.__file__, ringmaster.__file__
    assert os.path.isfile(os.path.join(ringmaster.include_dir(), "ringmaster", "ringmaster.h"))
    for header in ("communicator.h", "status.h", "comm_options.h", "tf_config.h"):
        assert os.path.isfile(os.path.join(ringmaster.include_dir(), "ringmaster", header)), header
    # The library was loaded once, from the package (the loader's DEEPBIND
    # copy is the one _core uses).
    maps = open("/proc/self/maps").read()
    loaded = {line.split()[-1] for line in maps.splitlines() if "libringmaster" in line}
    assert loaded == {os.path.realpath(lib)}, loaded


def test_soname_is_versioned():
    out = subprocess.run(["readelf", "-d", ringmaster.library_path()], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail(f"readelf failed: {out.stderr}")
    # The file's name is its SONAME (what _core's DT_NEEDED asks for), and
    # the ABI version is the one the C header's options layout belongs to.
    assert f"Library soname: [{os.path.basename(ringmaster.library_path())}]" in out.stdout, out.stdout
    assert "Library soname: [libringmaster.so.1]" in out.stdout, out.stdout


def test_import_prints_nothing_and_exits_cleanly():
    out = subprocess.run([sys.executable, "-c", "import ringmaster; ringmaster.shutdown()"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out
