"""What the installed wheel carries besides the library: the `ringmaster`
command, the extension's type stub, and the metadata pip shows."""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import ringmaster


def test_the_ringmaster_command_is_installed_and_runs():
    command = Path(sys.executable).parent / "ringmaster"  # the console script pip wrote into the venv
    assert command.is_file(), f"pip installed no `ringmaster` command at {command}"
    out = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ringmaster {metadata.version('ringmaster')}"
    bad = subprocess.run([str(command), "no-such-command"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "no-such-command" in bad.stderr


def test_the_extension_has_a_type_stub_that_matches_it():
    stub = Path(ringmaster.__file__).parent / "_core.pyi"
    text = stub.read_text()
    from ringmaster import _core
    for name in ("Comm", "Handle"):
        assert f"class {name}:" in text and hasattr(_core, name)
    for method in ("allreduce", "broadcast", "add_process_set", "start_timeline"):
        assert f"def {method}(" in text and hasattr(_core.Comm, method)
    assert (Path(ringmaster.__file__).parent / "py.typed").is_file()


def test_metadata_declares_the_license_and_the_tensorflow_extra():
    meta = metadata.metadata("ringmaster")
    assert meta["License"] == "Apache-2.0"
    assert "tensorflow" in (meta.get_all("Provides-Extra") or [])
    requires = metadata.requires("ringmaster") or []
    assert any(r.startswith("tensorflow>=") and 'extra == "tensorflow"' in r for r in requires), requires
    assert any(ep.name == "ringmaster" for ep in metadata.entry_points(group="console_scripts")
               if ep.value == "ringmaster._cli:main")


def test_one_wheel_for_every_python_with_the_prebuilt_ops():
    # The extension is built on the stable ABI (nanobind's split mode, whose
    # runtime is the nanobind-backend package): one file for CPython 3.10+.
    pkg = Path(ringmaster.__file__).parent
    assert [p.name for p in pkg.glob("_core*.so")] == ["_core.abi3.so"]
    requires = metadata.requires("ringmaster") or []
    assert any(r.startswith("nanobind-backend") for r in requires), requires
    # What auditwheel wrote: the manylinux tag users' pip matches.
    tags = [line.split(":", 1)[1].strip() for line in (metadata.distribution("ringmaster").read_text("WHEEL") or "")
            .splitlines() if line.startswith("Tag:")]
    assert tags and all(t.startswith("cp310-abi3-manylinux_2_") for t in tags), tags
    assert all(int(t.split("_")[2]) <= 34 for t in tags), tags
    # The op for the oldest and the newest TensorFlow, and what the system's
    # libraries were: vendored next to the package.
    prebuilt = {p.parent.name for p in (pkg / "tensorflow" / "_prebuilt").glob("tf-*/ringmaster_ops.so")}
    assert {"tf-2.16", "tf-2.21"} <= prebuilt, prebuilt
    assert any(p.name.startswith("libgrpc") for p in (pkg.parent / "ringmaster.libs").glob("*.so*"))
