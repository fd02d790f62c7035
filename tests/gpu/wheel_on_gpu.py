"""The wheel's agent on GPU memory, from Python (scripts/gpu-check): a group
of one all-reduces device buffers made by PyTorch or CuPy (whichever this
Python has), once through NCCL and once staged through the host (RING),
and the results are checked on the device. The agent finds the CUDA
runtime and NCCL as it does in a user's image: NVIDIA's pip wheels, or
RINGMASTER_CUDART_LIBRARY / RINGMASTER_NCCL_LIBRARY.

    python3 wheel_on_gpu.py        prints one JSON line; exit 0 when every check held
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "ports"))
from free_ports import free_ports  # noqa: E402,F401  (common/ports/free_ports.py; dlpack_on_gpu.py takes it from here)


def device_buffer(n: int, value: float):
    """(buffer, its device pointer, a function reading it back as a list)."""
    try:
        import torch
        x = torch.full((n,), value, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        return x, x.data_ptr(), lambda: (torch.cuda.synchronize(), x.cpu().tolist())[1]
    except ImportError:
        import cupy
        x = cupy.full((n,), value, dtype=cupy.float32)
        cupy.cuda.runtime.deviceSynchronize()
        return x, x.data.ptr, lambda: x.get().tolist()


def member_env(rank: int, tf_ports: list, agent_ports: list = ()) -> dict:
    """The variables that make this process member `rank` of a group on
    127.0.0.1 (TF_CONFIG; RINGMASTER_PORT: one agent port per member, when
    several share the host). tests/gpu/dlpack_on_gpu.py uses it too."""
    env = {"TF_CONFIG": json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in tf_ports]},
                                    "task": {"type": "worker", "index": rank}})}
    if agent_ports:
        env["RINGMASTER_PORT"] = ",".join(str(p) for p in agent_ports)
    return env


def main() -> int:
    os.environ.update(member_env(0, free_ports(1)))
    import ringmaster
    from ringmaster import _core

    out = {"python": sys.version.split()[0], "library": ringmaster.library_path(), "failures": []}
    keep = [device_buffer(4096, 3.0)]  # the CUDA context exists before the agent looks at a pointer
    comm = _core.Comm.from_environment()
    for name, impl in (("NCCL", 2), ("RING", 1)):
        buf, ptr, read = device_buffer(1 << 20, 2.0)
        try:
            comm.allreduce([(ptr, 1 << 20, 2)], 1, (0, _core.TIMEOUT_KEEP, impl, 0))  # float32, MEAN
            got = read()
            ok = got[0] == 2.0 and got[-1] == 2.0 and len(set(got)) == 1
            out[name] = "ok" if ok else f"wrong values {sorted(set(got))[:4]}"
        except Exception as e:  # the agent's own error, named
            out[name] = f"{type(e).__name__}: {e}"
        if out[name] != "ok":
            out["failures"].append(f"{name}: {out[name]}")
        keep.append(buf)
    comm.destroy()
    print(json.dumps(out))
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
