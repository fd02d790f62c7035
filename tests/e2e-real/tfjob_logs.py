"""Kubeflow's SDK (kubeflow-training, unchanged) reading a finished TFJob's
logs and events on real pods: get_job_logs for the master pod (the chief,
by training-operator's job-role label), for one replica type, and with its
events (verbose). Run by tfjob.sh with NS, JOB, KUBECONFIG and, in WANT, what
every replica printed."""
import os
import sys

from kubeflow.training import TrainingClient

NS, JOB, WANT = os.environ["NS"], os.environ["JOB"], os.environ["WANT"]
client = TrainingClient(config_file=os.environ["KUBECONFIG"], namespace=NS, job_kind="TFJob")


def fail(msg: str) -> None:
    print(f"FAIL tfjob_logs: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(what: str, got: object, want: object) -> None:
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


logs, events = client.get_job_logs(JOB)
expect("get_job_logs(): the master pods", sorted(logs), [f"{JOB}-chief-0"])
if WANT not in logs[f"{JOB}-chief-0"]:
    fail(f"get_job_logs(): the chief's log has no {WANT!r}: {logs[f'{JOB}-chief-0'][-500:]!r}")
expect("get_job_logs(): events without verbose", events, {})

logs, _ = client.get_job_logs(JOB, is_master=False, replica_type="worker")
expect("get_job_logs(replica_type='worker'): the pods", sorted(logs), [f"{JOB}-worker-0", f"{JOB}-worker-1"])
for pod, text in logs.items():
    if WANT not in text:
        fail(f"get_job_logs(replica_type='worker'): {pod}'s log has no {WANT!r}: {text[-300:]!r}")

logs, _ = client.get_job_logs(JOB, is_master=False, replica_type="worker", replica_index=1)
expect("get_job_logs(replica_type='worker', replica_index=1): the pods", sorted(logs), [f"{JOB}-worker-1"])

# verbose: the events, by "kind/name" in lower case ("tfjob/mnist", "pod/mnist-chief-0").
_, events = client.get_job_logs(JOB, verbose=True)
job_events = "\n".join(events.get(f"tfjob/{JOB}", []))
# Pods created at once are one event ("created pods: a, b"; training-operator
# writes one "Created pod: a" each): every pod is named in one.
for pod in (f"{JOB}-chief-0", f"{JOB}-worker-0", f"{JOB}-worker-1"):
    if pod not in job_events or "created pods" not in job_events:
        fail(f"get_job_logs(verbose=True): {pod}'s creation is not among the TFJob's events: {job_events!r}")
if f"Pod: {NS}.{JOB}-chief-0 exited with code 0" not in job_events:
    fail(f"get_job_logs(verbose=True): no ExitedWithCode event of the chief among the TFJob's: {job_events!r}")
if f"pod/{JOB}-chief-0" not in events:
    fail(f"get_job_logs(verbose=True): no events of the chief's pod: {sorted(events)!r}")
print(f"ok   tfjob_logs: get_job_logs on {JOB}: the chief's log, the workers', one worker's, the events")
