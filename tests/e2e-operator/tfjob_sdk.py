"""Kubeflow's own Python SDK (kubeflow-training, TrainingClient with
job_kind="TFJob") against Ringmaster's operator with --tfjob, unchanged:
create_job from a KubeflowOrgV1TFJob and from a train_func, get_job, list_jobs,
wait_for_job_conditions, is_job_* , get_job_pods / get_job_pod_names,
update_job, delete_job; a job that succeeds, one that fails, and one that
cannot be scheduled. Run by tfjob_sdk.sh (the venv, the operator, NS,
KUBECONFIG, TESTBED). The pods are on kwok's fake nodes: the test ends
their containers with `testbed pod-exit`; they have no logs to read."""
import os
import subprocess
import sys
import time

from kubeflow.training import (
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
    TrainingClient,
)
from kubernetes.client import (
    V1Container,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)

NS = os.environ["NS"]
TESTBED = os.environ["TESTBED"]
IMAGE = "ghcr.io/ringmaster/worker:0.1.0"
client = TrainingClient(config_file=os.environ["KUBECONFIG"], namespace=NS, job_kind="TFJob")


def fail(msg):
    print(f"FAIL tfjob_sdk: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"ok   tfjob_sdk: {msg}")


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def replica(n, restart="Never", node_selector=None):
    return KubeflowOrgV1ReplicaSpec(
        replicas=n,
        restart_policy=restart,
        template=V1PodTemplateSpec(
            spec=V1PodSpec(
                containers=[V1Container(name="tensorflow", image=IMAGE, command=["ringmaster-worker"])],
                node_selector=node_selector,
            )
        ),
    )


def tfjob(name, specs, run_policy=None):
    return KubeflowOrgV1TFJob(
        api_version="kubeflow.org/v1",
        kind="TFJob",
        metadata=V1ObjectMeta(name=name, namespace=NS),
        spec=KubeflowOrgV1TFJobSpec(tf_replica_specs=specs, run_policy=run_policy or KubeflowOrgV1RunPolicy()),
    )


def pod_exit(pod, code):
    subprocess.run([TESTBED, "pod-exit", NS, pod, str(code)], check=True, capture_output=True)


def wait(name, conditions, timeout=90):
    return client.wait_for_job_conditions(
        name, expected_conditions=set(conditions), wait_timeout=timeout, polling_interval=1
    )


# 1. A job that succeeds.
client.create_job(job=tfjob("ok", {"Chief": replica(1), "Worker": replica(2, "OnFailure")}))
job = client.get_job("ok")
expect("get_job's name", job.metadata.name, "ok")
if "ok" not in [j.metadata.name for j in client.list_jobs()]:
    fail("list_jobs does not list ok")
wait("ok", {"Running"})
if not client.is_job_running("ok") or not client.is_job_created("ok"):
    fail("is_job_running/is_job_created")
names = sorted(client.get_job_pod_names("ok"))
expect("get_job_pod_names", names, ["ok-chief-0", "ok-worker-0", "ok-worker-1"])
master = [p.metadata.name for p in client.get_job_pods("ok", is_master=True)]
expect("get_job_pods(is_master=True)", master, ["ok-chief-0"])
workers = sorted(p.metadata.name for p in client.get_job_pods("ok", replica_type="worker"))
expect("get_job_pods(replica_type=worker)", workers, ["ok-worker-0", "ok-worker-1"])
one = [p.metadata.name for p in client.get_job_pods("ok", replica_type="worker", replica_index=1)]
expect("get_job_pods(worker, 1)", one, ["ok-worker-1"])
pod_exit("ok-chief-0", 0)
job = wait("ok", {"Succeeded"})
if not client.is_job_succeeded("ok") or client.is_job_failed("ok"):
    fail("is_job_succeeded/is_job_failed after success")
expect("the last condition", client.get_job_conditions("ok")[-1].type, "Succeeded")
expect("replica_statuses Chief succeeded", job.status.replica_statuses["Chief"].succeeded, 1)
if job.status.completion_time is None:
    fail("no completion_time")
ok("create_job, get_job, list_jobs, wait_for_job_conditions, get_job_pods, is_job_*: Succeeded")

# 2. A job that fails: wait_for_job_conditions raises, as under training-operator.
client.create_job(job=tfjob("bad", {"Worker": replica(2)}))
wait("bad", {"Running"})
pod_exit("bad-worker-1", 3)
try:
    wait("bad", {"Succeeded"})
    fail("wait_for_job_conditions(Succeeded) returned for a failed job")
except RuntimeError as e:
    if "is Failed" not in str(e):
        fail(f"the error does not say Failed: {e}")
if not client.is_job_failed("bad"):
    fail("is_job_failed")
reason = [c.reason for c in client.get_job_conditions("bad") if c.type == "Failed"]
expect("the Failed reason", reason, ["TFJobFailed"])
ok("a worker exits 3: Failed (TFJobFailed), wait_for_job_conditions raises RuntimeError")

# 3. One that cannot be scheduled: Created, never Running; the wait times out.
client.create_job(job=tfjob("stuck", {"Worker": replica(1, node_selector={"no-such": "node"})}))
wait("stuck", {"Created"})
try:
    wait("stuck", {"Running"}, timeout=5)
    fail("an unschedulable job reached Running")
except TimeoutError:
    pass
phases = [p.status.phase for p in client.get_job_pods("stuck")]
expect("the unschedulable job's pod", phases, ["Pending"])
ok("an unschedulable job: Created, its pod Pending, wait_for_job_conditions(Running) times out")

# 3b. The train_func form: the SDK writes the TFJob (a tensorflow container
# running the function) and Ringmaster runs it as any other.
def train():
    print("training")


client.create_job(name="fn", train_func=train, num_workers=2, num_chief_replicas=1, base_image=IMAGE)
wait("fn", {"Running"})
expect("the train_func job's pods", sorted(client.get_job_pod_names("fn")), ["fn-chief-0", "fn-worker-0", "fn-worker-1"])
pod_exit("fn-chief-0", 0)
wait("fn", {"Succeeded"})
ok("create_job(train_func=...): Running, then Succeeded")

# 4. update_job (suspend it: its pods go, Suspended), delete_job.
job = client.get_job("stuck")
job.spec.run_policy = job.spec.run_policy or KubeflowOrgV1RunPolicy()
job.spec.run_policy.suspend = True
client.update_job(job, "stuck")
deadline = time.time() + 60
while True:
    conditions = {c.type: c.status for c in client.get_job_conditions("stuck")}
    if conditions.get("Suspended") == "True" and not client.get_job_pods("stuck"):
        break
    if time.time() > deadline:
        fail(f"update_job(suspend) did not suspend: {conditions}")
    time.sleep(0.5)
for name in ("ok", "bad", "stuck", "fn"):
    client.delete_job(name)
deadline = time.time() + 60
while client.list_jobs():
    if time.time() > deadline:
        fail("delete_job left jobs: %s" % [j.metadata.name for j in client.list_jobs()])
    time.sleep(0.5)
ok("update_job (suspend: Suspended, pods gone), delete_job")
