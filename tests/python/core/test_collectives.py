"""Groups of 3 processes on 127.0.0.1 (see conftest.py and worker.py)."""

from __future__ import annotations

import os
import signal
import time


def test_all_reduce_every_dtype_and_op_in_place(run_group):
    members = run_group("dtypes").expect_ok(240)
    # 10 dtypes x 5 ops checked on every member.
    assert [m.result["checked"] for m in members] == [50, 50, 50]


def test_lists_async_broadcast_gather_barrier_reduce_dlpack_abort(run_group):
    members = run_group("collectives").expect_ok(240)
    assert "test abort" in members[0].result["aborted"], members[0].result
    for m in members[1:]:
        # The culprit's reason, and who reported it.
        assert "test abort" in m.result["aborted"], m.result
        assert "/job:worker/task:0" in m.result["aborted"], m.result


def test_stalled_member_times_out_the_others(run_group):
    group = run_group("stall")
    members = group.expect_ok(120)
    for m in members[:-1]:
        assert m.result["error"] == "DeadlineExceededError", group.report()
        assert m.result["code"] == 4
        # Raised, not hung: bounded well below the stalled member's 8 s.
        assert m.result["seconds"] < 7.5, group.report()


def test_killed_member_is_named_on_survivors(run_group):
    group = run_group("kill", env={"RINGMASTER_HEARTBEAT_TIMEOUT_SECONDS": "2"})
    victim = group.members[-1]
    group.wait_line(victim.rank, "READY", 60)
    time.sleep(0.5)  # the survivors are inside the all-reduce
    killed_at = time.time()
    os.killpg(victim.proc.pid, signal.SIGKILL)
    group.finish(60)
    for m in group.members[:-1]:
        assert m.proc.returncode == 0 and m.result, group.report()
        assert m.result["error"] == "UnavailableError", group.report()
        assert "/job:worker/task:2" in m.result["message"], m.result["message"]
        assert m.result["at"] - killed_at < 5.0, (m.result["at"] - killed_at, group.report())


def test_formation_timeout_names_the_missing_task(run_group):
    group = run_group("formation", ranks=[0, 1],
                      env={"RINGMASTER_FORMATION_TIMEOUT_SECONDS": "3"})
    members = group.expect_ok(90)
    for m in members:
        assert m.result["error"] in ("DeadlineExceededError", "UnavailableError"), m.result
        assert "/job:worker/task:2" in m.result["message"], m.result["message"]
