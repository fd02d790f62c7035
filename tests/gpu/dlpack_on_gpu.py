"""CUDA DLPack arrays through the installed ringmaster package (the lead's
scripts/gpu-check runs it on a GPU machine): CuPy, PyTorch and, where
importable, JAX device arrays all-reduced in place by a group of 1 (NCCL,
then staged through the host) and of 2 members (staged: NCCL puts no two
ranks on one GPU; with two GPUs or more, each member takes its own and
AUTO runs). Every element is checked on the host; a non-default stream
whose work fills the array late must be waited for (and work queued on it
after the call must see the results); all_reduce_async too; out= gives
right results and leaves the input as it was; broadcast on device arrays
must say it is not done; a strided array must be refused.

    python3 dlpack_on_gpu.py     prints one JSON line; exit 0 when every check held,
                                 or when there is no GPU / no framework ("skipped")

Members are processes of this script (--member RANK SIZE IMPL), joined
with wheel_on_gpu.py's member_env.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List

try:
    import numpy as np
except ImportError:  # then there is no ringmaster either: main() says "skipped"
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wheel_on_gpu import free_ports, member_env  # noqa: E402

N = 1 << 20
# JAX would take most of the GPU's memory at import; two members share one GPU.
CHILD_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "PYTHONUNBUFFERED": "1"}
EXPECTED = ("ok", "unimplemented, as expected", "refused, as expected")


class Torch:
    name = "torch"

    def __init__(self, device: int) -> None:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no GPU")
        torch.cuda.set_device(device)
        self.t, self.dev = torch, f"cuda:{device}"

    def dtype(self, name: str) -> Any:
        return getattr(self.t, name)

    def arange(self, n: int, dtype: str = "float32") -> Any:
        return self.t.arange(n, device=self.dev).to(self.dtype(dtype))

    def full(self, n: int, value: float, dtype: str = "float32") -> Any:
        return self.t.full((n,), value, dtype=self.dtype(dtype), device=self.dev)

    def host(self, x: Any) -> np.ndarray:
        self.t.cuda.synchronize()
        return x.float().cpu().numpy().astype(np.float64)

    def stream(self) -> Any:
        return self.t.cuda.Stream()  # non-blocking: no implicit order with the legacy stream

    def late_fill(self, x: Any, value: float, stream: Any) -> None:
        with self.t.cuda.stream(stream):
            busy(self.t.ones((4096, 4096), device=self.dev))
            x.fill_(value)

    def scaled_on(self, x: Any, k: float, stream: Any) -> Any:
        with self.t.cuda.stream(stream):
            return x * k

    def strided(self, n: int) -> Any:
        return self.t.zeros((n, 2), device=self.dev)[:, 0]


class Cupy:
    name = "cupy"

    def __init__(self, device: int) -> None:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("CuPy sees no GPU")
        cupy.cuda.Device(device).use()
        self.cp = cupy

    def arange(self, n: int, dtype: str = "float32") -> Any:
        return self.cp.arange(n, dtype=dtype)

    def full(self, n: int, value: float, dtype: str = "float32") -> Any:
        return self.cp.full((n,), value, dtype=dtype)

    def host(self, x: Any) -> np.ndarray:
        self.cp.cuda.runtime.deviceSynchronize()
        return self.cp.asnumpy(x).astype(np.float64)

    def stream(self) -> Any:
        return self.cp.cuda.Stream(non_blocking=True)

    def late_fill(self, x: Any, value: float, stream: Any) -> None:
        with stream:
            busy(self.cp.ones((4096, 4096), dtype="float32"))
            x.fill(value)

    def scaled_on(self, x: Any, k: float, stream: Any) -> Any:
        with stream:
            return x * k

    def strided(self, n: int) -> Any:
        return self.cp.zeros((n, 2), dtype="float32")[:, 0]


class Jax:
    name = "jax"

    def __init__(self, device: int) -> None:
        import jax
        import jax.numpy as jnp
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if not gpus:
            raise RuntimeError("JAX sees no GPU")
        self.jax, self.jnp, self.dev = jax, jnp, gpus[device % len(gpus)]

    def arange(self, n: int, dtype: str = "float32") -> Any:
        return self.jax.device_put(self.jnp.arange(n, dtype=dtype), self.dev)

    def full(self, n: int, value: float, dtype: str = "float32") -> Any:
        return self.jax.device_put(self.jnp.full((n,), value, dtype=dtype), self.dev)

    def host(self, x: Any) -> np.ndarray:
        return np.asarray(x).astype(np.float64)

    stream = None  # JAX shows no streams: its arrays are ready when exported

    def strided(self, n: int) -> Any:
        return None  # JAX arrays are always compact


def busy(a: Any) -> None:
    """Some tens of milliseconds of GPU work queued on the current stream."""
    for _ in range(24):
        a = (a @ a) * (1.0 / 4096)  # ones stay ones


def frameworks(device: int) -> tuple:
    """(adapters that import and see a GPU, {name: why not} for the others)."""
    found, missing = [], {}
    for cls in (Cupy, Torch, Jax):
        try:
            found.append(cls(device))
        except Exception as e:  # ImportError, no GPU, a broken install
            missing[cls.name] = f"{type(e).__name__}: {e}"
    return found, missing


def check(got: np.ndarray, want: np.ndarray) -> str:
    if got.shape == want.shape and np.array_equal(got, want):
        return "ok"
    bad = np.flatnonzero(got != want)
    i = int(bad[0]) if bad.size else 0
    return f"wrong: {bad.size} of {want.size} elements differ, first at {i}: {got.flat[i]} != {want.flat[i]}"


def run_cases(comm: Any, fw: Any, rank: int, size: int, options: Any) -> Dict[str, str]:
    import ringmaster
    total = size * (size + 1) / 2  # the sum of rank + 1 over the group
    out: Dict[str, str] = {}

    def case(name: str, body: Callable[[], str]) -> None:
        try:
            out[name] = body()
        except Exception as e:  # the package's error, named
            out[name] = f"{type(e).__name__}: {e}"

    def in_place() -> str:
        a = fw.arange(N) * (rank + 1)
        b = fw.full(N // 3, rank + 1, "float16")
        got = comm.all_reduce([a, b], options=options)
        if got[0] is not a or got[1] is not b:
            return "not in place: other objects returned"
        r = check(fw.host(a), np.arange(N, dtype=np.float64) * total)
        return r if r != "ok" else check(fw.host(b), np.full(N // 3, total))

    def mean() -> str:
        x = fw.full(N, rank + 1)
        assert comm.all_reduce(x, op="mean", options=options) is x
        return check(fw.host(x), np.full(N, total / size))

    def on_stream() -> str:
        s = fw.stream()
        x = fw.full(N, 0.0)
        fw.host(x)  # zeros everywhere, then filled late on s, not synchronized
        fw.late_fill(x, rank + 1, s)
        comm.all_reduce(x, stream=s, options=options)
        after = fw.scaled_on(x, 2.0, s)  # queued on s after the call: sees the results
        r = check(fw.host(x), np.full(N, total))
        return r if r != "ok" else check(fw.host(after), np.full(N, 2 * total))

    def in_async() -> str:
        x = fw.full(N, rank + 1)
        h = comm.all_reduce_async([x], options=options)
        got = h.wait()
        if got[0] is not x:
            return "not in place: another object returned"
        return check(fw.host(x), np.full(N, total))

    def out_of_place() -> str:
        x, y = fw.full(N, rank + 1), fw.full(N, -1.0)
        comm.all_reduce(x, out=y, options=options)
        r = check(fw.host(y), np.full(N, total))
        return r if r != "ok" else check(fw.host(x), np.full(N, rank + 1.0))

    def broadcast() -> str:
        try:
            comm.broadcast(fw.full(16, 1.0))
        except ringmaster.UnimplementedError as e:
            return "unimplemented, as expected" if "broadcast" in str(e) else f"UnimplementedError: {e}"
        return "broadcast took a device array (update this check)"

    def strided() -> str:
        try:
            comm.all_reduce(fw.strided(64), options=options)
        except ringmaster.InvalidArgumentError as e:
            return "refused, as expected" if "values[0]: a strided" in str(e) else f"InvalidArgumentError: {e}"
        return "a strided device array was accepted"

    case("in_place", in_place)
    case("mean", mean)
    if fw.stream is not None:
        case("stream", on_stream)
    case("async", in_async)
    case("out", out_of_place)
    case("broadcast", broadcast)
    if fw.strided(1) is not None:
        case("strided", strided)
    return out


def member(rank: int, size: int, impl: str) -> int:
    """One member: every framework's cases; prints RESULT {json} last."""
    device = 0
    try:
        import cupy
        device = rank % max(1, cupy.cuda.runtime.getDeviceCount())
    except Exception:
        try:
            import torch
            device = rank % max(1, torch.cuda.device_count())
        except Exception:
            pass
    fws, missing = frameworks(device)  # each makes its CUDA context before the agent looks
    import ringmaster
    comm = ringmaster.Communicator.from_environment()
    options = ringmaster.CommunicationOptions(implementation=impl, timeout_seconds=120)
    results = {fw.name: run_cases(comm, fw, rank, size, options) for fw in fws}
    comm.close()
    print("RESULT " + json.dumps({"results": results, "missing": missing, "device": device}), flush=True)
    return 0


def run_group(size: int, impl: str, timeout: float) -> Dict[str, Any]:
    """`size` members of this script; their RESULTs, or why there are none."""
    ports = free_ports(2 * size)
    procs = []
    for rank in range(size):
        env = dict(os.environ, **CHILD_ENV, **member_env(rank, ports[:size], ports[size:]))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--member", str(rank),
                                       str(size), impl], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout
    members: List[Dict[str, Any]] = []
    for rank, p in enumerate(procs):
        try:
            text, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            text, _ = p.communicate()
            text += f"\n(killed after {timeout:.0f} s)"
        lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
        if p.returncode == 0 and lines:
            members.append(json.loads(lines[-1][len("RESULT "):]))
        else:
            members.append({"error": f"member {rank} exited {p.returncode}: " + text[-1500:]})
    return {"members": members}


def gpu_count() -> int:
    for probe in ("import cupy; print(cupy.cuda.runtime.getDeviceCount())",
                  "import torch; print(torch.cuda.device_count())",
                  "import jax; print(sum(d.platform == 'gpu' for d in jax.devices()))"):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        if r.returncode == 0 and r.stdout.strip().isdigit():
            return int(r.stdout.strip())
    return 0


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--member":
        return member(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    out: Dict[str, Any] = {"python": sys.version.split()[0], "failures": []}
    try:
        import numpy  # noqa: F401  (ringmaster's own dependency)
        import ringmaster
        out["library"] = ringmaster.library_path()
    except Exception as e:
        out["skipped"] = f"no ringmaster package ({type(e).__name__}: {e})"
        print(json.dumps(out))
        return 0
    gpus = gpu_count()
    if gpus == 0:
        out["skipped"] = "no GPU, or no CuPy, PyTorch or JAX to see one"
        print(json.dumps(out))
        return 0
    out["gpus"] = gpus
    groups = [("1 member, AUTO", 1, "AUTO"), ("1 member, RING", 1, "RING"),
              ("2 members, " + ("AUTO" if gpus >= 2 else "RING"), 2, "AUTO" if gpus >= 2 else "RING")]
    seen = set()
    for label, size, impl in groups:
        got = run_group(size, impl, timeout=240)
        out[label] = {}
        for rank, m in enumerate(got["members"]):
            if "error" in m:
                out["failures"].append(f"{label}: {m['error']}")
                continue
            out.setdefault("missing", m["missing"])
            for fw, cases in m["results"].items():
                seen.add(fw)
                for name, status in cases.items():
                    if rank == 0:
                        out[label].setdefault(fw, {})[name] = status
                    if status not in EXPECTED:
                        out["failures"].append(f"{label}, rank {rank}, {fw} {name}: {status}")
    if not seen and not out["failures"]:
        out["skipped"] = "no framework with a GPU: " + json.dumps(out.get("missing", {}))
    print(json.dumps(out))
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
