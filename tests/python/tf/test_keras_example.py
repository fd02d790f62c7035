"""examples/keras/job.yaml under `ringmaster run` (the CLI: $RINGMASTER_CLI,
else build/bin/ringmaster), with PATH led by this Python's bin directory, as
a user with the venv activated has it: the chief reaches the accuracy the
example asserts and every rank prints the same weight checksum."""
from __future__ import annotations

import re

from group import ringmaster_run


def test_keras_example_under_ringmaster_run(op_library):
    out = ringmaster_run("examples/keras/job.yaml", timeout=540)
    shas = re.findall(r"^\[(chief-0|worker-0|worker-1)\] rank (\d): weights sha256 ([0-9a-f]{64})$", out, re.M)
    assert sorted(r for _, r, _ in shas) == ["0", "1", "2"], out[-6000:]
    assert len({s for _, _, s in shas}) == 1, f"weights differ between ranks: {shas}"
    m = re.search(r"^\[chief-0\] test accuracy ([0-9.]+) \(required >= ([0-9.]+)\)$", out, re.M)
    assert m and float(m.group(1)) >= float(m.group(2)) >= 0.9, out[-6000:]
    assert re.search(r"^\[chief-0\] epoch  1: .* step [0-9.]+ ms", out, re.M), out[-6000:]
