"""A TLS proxy between an operator and the API server that injects 409s and slow answers.

The fault soak (soak.py) points its operators at this proxy. It terminates
their TLS with the API server's own certificate (so their kubeconfig's CA
still verifies it), reads each HTTP/1.1 request, and either

  conflicts  answers a write of a job (PUT or PATCH of a DistributedJob or
             TFJob, or of its status) with 409 Conflict itself, as the API
             server does when another writer changed the object first;
  delays     holds the request for a while before forwarding it, as an
             overloaded API server answers late; or
  forwards   passes it on at once,

drawing one of the three per request with the probabilities it was given.
Everything else (watch streams included) is copied byte for byte in both
directions, with the proxy authenticating upstream as the operator's own
client certificate. When the API server goes away, the proxy closes the
operator's connection, as the API server's going away would.

A conflict is only injected where a real one can occur: on an update of an
existing object. A create is never answered 409 (that would claim an object
exists that does not), nor is an Event (the recorder counts a 409 as
delivered).
"""
from __future__ import annotations

import asyncio
import json
import random
import re
import ssl
import threading
from dataclasses import dataclass, field

_JOB_WRITE = re.compile(r"^/apis/(ringmaster\.io|kubeflow\.org)/[^/]+/namespaces/([^/]+)/"
                        r"(distributedjobs|tfjobs)/([^/?]+)(/status)?(\?.*)?$")


@dataclass
class Counts:
    requests: int = 0
    conflicts: int = 0
    delayed: int = 0
    delayed_s: float = 0.0
    upstream_refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **kw: float) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


def conflict_response(path: str) -> bytes:
    m = _JOB_WRITE.match(path)
    group, kind, name = (m.group(1), m.group(3), m.group(4)) if m else ("", "", "")
    body = json.dumps({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict",
        "message": f'Operation cannot be fulfilled on {kind}.{group} "{name}": the object has been modified; '
                   "please apply your changes to the latest version and try again",
        "details": {"name": name, "group": group, "kind": kind}, "code": 409}).encode()
    return (b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class ApiProxy:
    """Listens on 127.0.0.1 (port chosen by the kernel) in a thread of its own; `port` once started."""

    def __init__(self, upstream: tuple[str, int], pki: str, rng: random.Random, conflict_p: float,
                 delay_p: float, delay_s: tuple[float, float]) -> None:
        if not (0 <= conflict_p <= 1 and 0 <= delay_p <= 1 and conflict_p + delay_p <= 1):
            raise ValueError(f"probabilities must be in [0, 1] and sum to at most 1: {conflict_p} {delay_p}")
        self.upstream, self.rng, self.conflict_p, self.delay_p, self.delay_s = \
            upstream, rng, conflict_p, delay_p, delay_s
        self.counts = Counts()
        self.server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server_ctx.load_cert_chain(f"{pki}/apiserver.crt", f"{pki}/apiserver.key")
        self.server_ctx.set_alpn_protocols(["http/1.1"])
        self.client_ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=f"{pki}/ca.crt")
        self.client_ctx.load_cert_chain(f"{pki}/admin.crt", f"{pki}/admin.key")
        self.client_ctx.set_alpn_protocols(["http/1.1"])
        self.port = 0
        self._rng_lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="api-proxy")

    def start(self) -> "ApiProxy":
        self._thread.start()
        if not self._ready.wait(10) or not self.port:
            raise RuntimeError("the API proxy did not start listening")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.server_ctx, limit=1 << 20))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def _draw(self, method: str, path: str) -> tuple[str, float]:
        with self._rng_lock:
            r = self.rng.random()
            if method in ("PUT", "PATCH") and _JOB_WRITE.match(path) and r < self.conflict_p:
                return "conflict", 0.0
            if self.conflict_p <= r < self.conflict_p + self.delay_p:
                return "delay", self.rng.uniform(*self.delay_s)
            return "forward", 0.0

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            ureader, uwriter = await asyncio.open_connection(
                *self.upstream, ssl=self.client_ctx, server_hostname=self.upstream[0], limit=1 << 20)
        except OSError:
            self.counts.add(upstream_refused=1)
            cwriter.close()
            return
        pump = asyncio.ensure_future(self._copy(ureader, cwriter))
        try:
            while not pump.done():
                request = await self._read_request(creader)
                if request is None:
                    break
                head, body, method, path = request
                self.counts.add(requests=1)
                action, seconds = self._draw(method, path)
                if action == "conflict":
                    # The client sends its next request only after this one's answer (no pipelining),
                    # so no upstream answer is being copied to it now.
                    self.counts.add(conflicts=1)
                    cwriter.write(conflict_response(path))
                    await cwriter.drain()
                    continue
                if action == "delay":
                    self.counts.add(delayed=1, delayed_s=seconds)
                    await asyncio.sleep(seconds)
                uwriter.write(head + body)
                await uwriter.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            pump.cancel()
            for w in (uwriter, cwriter):
                w.close()

    @staticmethod
    async def _read_request(r: asyncio.StreamReader) -> tuple[bytes, bytes, str, str] | None:
        try:
            head = await r.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:  # chunks, then the (empty) trailer
                size_line = await r.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                body += size_line + await r.readexactly(size + 2)
                if size == 0:
                    break
        else:
            body = await r.readexactly(int(headers.get("content-length", "0")))
        return head, body, method, path

    @staticmethod
    async def _copy(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(1 << 16):
                w.write(data)
                await w.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            w.close()
