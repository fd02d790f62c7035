"""Compares what training-operator and Ringmaster's operator made of the same
TFJob (tfjob_compare.sh's snapshots: `kubectl get -o json` of the TFJob, its
pods and its Services). Fields the API server fills in for both (uids,
times, defaults) are dropped; Ringmaster's additions that docs/kubeflow.md
lists as on purpose ("What is the same and what differs") are removed from
its side, each named below; what is left must be equal.

usage: tfjob_compare.py THEIRS_DIR OURS_DIR PHASE"""
import json
import sys

# Ringmaster's additions, on purpose (docs/kubeflow.md).
OUR_ENV_PREFIX = "RINGMASTER_"              # the agent's settings
OUR_VOLUME = "ringmaster-job-key"          # the job key, mounted read-only
OUR_STATUS_FIELDS = ("lastReconcileTime", "restartCount", "replacements")
OUR_ANNOTATION = "status.ringmaster.io/state"


def load(d, what):
    with open(f"{d}/{what}.json") as f:
        return json.load(f)


def pod_view(pod, ours):
    meta, spec = pod["metadata"], pod["spec"]
    out = {
        "name": meta["name"],
        "labels": meta.get("labels", {}),
        "annotations": meta.get("annotations", {}),
        "owners": [{k: r.get(k) for k in ("apiVersion", "kind", "name", "controller", "blockOwnerDeletion")}
                   for r in meta.get("ownerReferences", [])],
        "restartPolicy": spec.get("restartPolicy"),
        "hostname": spec.get("hostname"),
        "subdomain": spec.get("subdomain"),
        "volumes": [v["name"] for v in spec.get("volumes", [])
                    if not (ours and v["name"] == OUR_VOLUME) and not v["name"].startswith("kube-api-access")],
        "containers": [],
    }
    for c in spec["containers"]:
        env = [(e["name"], e.get("value")) for e in c.get("env", [])
               if not (ours and e["name"].startswith(OUR_ENV_PREFIX))]
        mounts = [m["name"] for m in c.get("volumeMounts", [])
                  if not (ours and m["name"] == OUR_VOLUME) and not m["name"].startswith("kube-api-access")]
        policy = c.get("terminationMessagePolicy")
        if ours and policy == "FallbackToLogsOnError":  # the agent's verdict
            policy = "File"
        out["containers"].append({"name": c["name"], "image": c.get("image"), "command": c.get("command"),
                                  "args": c.get("args"), "env": env, "ports": c.get("ports"),
                                  "mounts": mounts, "terminationMessagePolicy": policy})
    return out


def service_view(svc):
    meta, spec = svc["metadata"], svc["spec"]
    return {
        "name": meta["name"],
        "labels": meta.get("labels", {}),
        "owners": [{k: r.get(k) for k in ("apiVersion", "kind", "name", "controller", "blockOwnerDeletion")}
                   for r in meta.get("ownerReferences", [])],
        "clusterIP": spec.get("clusterIP"),
        "selector": spec.get("selector"),
        # training-operator lists them in Go's map order, which varies.
        "ports": sorted(spec.get("ports") or [], key=lambda p: p.get("name", "")),
        "publishNotReadyAddresses": spec.get("publishNotReadyAddresses"),
    }


def status_view(job, ours):
    st = dict(job.get("status", {}))
    for f in OUR_STATUS_FIELDS if ours else ("lastReconcileTime",):
        st.pop(f, None)
    conditions = [(c["type"], c["status"], c.get("reason")) for c in st.get("conditions", [])]
    replicas = {t: {k: v for k, v in r.items() if k in ("active", "succeeded", "failed")}
                for t, r in st.get("replicaStatuses", {}).items()}
    # Only which are there: the times differ by when each ran.
    times = sorted(k for k in st if k.endswith("Time"))
    return {"conditions": conditions, "replicaStatuses": replicas, "times": times}


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            diff(a.get(k), b.get(k), f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: training-operator {json.dumps(a)}, Ringmaster {json.dumps(b)}")


def main():
    theirs_dir, ours_dir, phase = sys.argv[1:]
    out = []
    theirs, ours = load(theirs_dir, "pods")["items"], load(ours_dir, "pods")["items"]
    by_name = lambda items: {i["metadata"]["name"]: i for i in items}
    tp, op = by_name(theirs), by_name(ours)
    diff(sorted(tp), sorted(op), "pods", out)
    for name in sorted(set(tp) & set(op)):
        diff(pod_view(tp[name], False), pod_view(op[name], True), f"pod {name}", out)
    ts, os_ = by_name(load(theirs_dir, "services")["items"]), by_name(load(ours_dir, "services")["items"])
    diff(sorted(ts), sorted(os_), "services", out)
    for name in sorted(set(ts) & set(os_)):
        diff(service_view(ts[name]), service_view(os_[name]), f"service {name}", out)
    tj, oj = load(theirs_dir, "tfjob"), load(ours_dir, "tfjob")
    ann = dict(oj["metadata"].get("annotations", {}))
    ann.pop(OUR_ANNOTATION, None)
    ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    tann = dict(tj["metadata"].get("annotations", {}))
    tann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    diff(tann, ann, "tfjob.annotations", out)
    diff(status_view(tj, False), status_view(oj, True), "tfjob.status", out)
    for line in out:
        print(f"DIFF [{phase}] {line}")
    print(f"compared [{phase}]: {len(tp)} pods, {len(ts)} Services, the TFJob's status: "
          f"{'no difference' if not out else str(len(out)) + ' difference(s)'}")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
