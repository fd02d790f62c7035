#!/usr/bin/env python3
"""Compares the Helm chart's default rendering with manifests/ (tests/chart/render.sh).

Usage: compare.py CHART_DEFAULT.yaml CHART_NETWORKPOLICY.yaml KUSTOMIZED.yaml MANIFESTS_DIR

Every object of one side must be in the other (kind, namespace, name), and
equal to it field by field once Helm's own labels are removed. The few
differences that are on purpose are listed in EXPECTED below, each with its
reason; anything else is printed as "FAIL: ..." and the exit status is 1.
"""
import glob
import json
import os
import sys

import yaml

# Labels Helm's practice adds to every object (and to selectors) that
# static YAML cannot carry: ignored on both sides, nothing else is.
HELM_LABELS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
}

# The differences on purpose. Keys are manifests/' objects.
#  - The Namespace: Helm's practice is `helm install -n NS --create-namespace`;
#    a chart that templates its own release namespace cannot be installed
#    into an existing one.
ONLY_IN_MANIFESTS = {("Namespace", "", "ringmaster-system")}
#  - The TFJob CRD: the chart's crds/ holds it, and Helm installs it only
#    where none exists; manifests/ leave it out, since `kubectl apply` would
#    replace the one training-operator installed.
ONLY_IN_CHART = {("CustomResourceDefinition", "", "tfjobs.kubeflow.org")}
RENAMED: dict = {}  # manifests/' name -> the chart's, where they differ (none now)
#  - The operator's ClusterRole: manifests/ grant the NetworkPolicy rule
#    always (static YAML); the chart only with networkPolicy.enabled (the
#    flag that uses it). So manifests/' rules must equal the chart's with
#    networkPolicy.enabled=true, and the chart's default rules are those
#    without the NetworkPolicy rule.
NETWORKPOLICY_ROLE = ("ClusterRole", "", "ringmaster-operator")
NETWORKPOLICY_RULE = {
    "apiGroups": ["networking.k8s.io"],
    "resources": ["networkpolicies"],
    "verbs": ["create", "get"],
}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def load(path_or_paths):
    objs = []
    paths = [path_or_paths] if isinstance(path_or_paths, str) else path_or_paths
    for path in paths:
        try:
            with open(path) as f:
                docs = list(yaml.safe_load_all(f))
        except (OSError, yaml.YAMLError) as e:
            fail("%s: cannot be read as YAML: %s" % (path, e))
            continue
        for doc in docs:
            if doc is None:
                continue
            if not isinstance(doc, dict) or "kind" not in doc:
                fail(("%s: a document that is not a Kubernetes object: %r" % (path, doc))[:300])
                continue
            objs.append(doc)
    return objs


def key(obj):
    md = obj.get("metadata") or {}
    return (obj["kind"], md.get("namespace") or "", md.get("name") or "")


def show(k):
    kind, ns, name = k
    return "%s %s" % (kind, ns + "/" + name if ns else name)


def index(objs, where):
    out = {}
    for o in objs:
        k = key(o)
        if k in out:
            fail("%s: %s appears twice" % (where, show(k)))
        out[k] = o
    return out


def strip_helm_labels(node):
    """Removes Helm's labels wherever they are keys: metadata.labels, the
    selectors (matchLabels, a Service's selector) and the pod template's labels."""
    if isinstance(node, dict):
        return {k: strip_helm_labels(v) for k, v in node.items() if k not in HELM_LABELS}
    if isinstance(node, list):
        return [strip_helm_labels(v) for v in node]
    return node


def fmt(value):
    return json.dumps(value, sort_keys=True)


def diff(a, b, path, out):
    """Appends 'path: chart X, manifests Y' for every difference (a: chart, b: manifests)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = "%s.%s" % (path, k) if path else k
            if k not in b:
                out.append("%s: only in the chart (%s)" % (p, fmt(a[k])))
            elif k not in a:
                out.append("%s: only in manifests/ (%s)" % (p, fmt(b[k])))
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            p = "%s[%d]" % (path, i)
            if i >= len(b):
                out.append("%s: only in the chart (%s)" % (p, fmt(a[i])))
            elif i >= len(a):
                out.append("%s: only in manifests/ (%s)" % (p, fmt(b[i])))
            else:
                diff(a[i], b[i], p, out)
    elif a != b or type(a) is not type(b):
        out.append("%s: chart %s, manifests/ %s" % (path, fmt(a), fmt(b)))


def compare(chart_obj, manifest_obj, what):
    out = []
    diff(strip_helm_labels(chart_obj), strip_helm_labels(manifest_obj), "", out)
    for line in out:
        fail("%s: %s" % (what, line))
    return not out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    chart_file, chart_np_file, kustomized_file, manifests_dir = sys.argv[1:]
    manifest_files = sorted(glob.glob(os.path.join(manifests_dir, "*.yaml")))
    chart = index(load(chart_file), "the chart")
    chart_np = index(load(chart_np_file), "the chart (networkPolicy.enabled=true)")
    manifests = index(load(manifest_files), "manifests/")

    # Objects on one side only.
    mapped = {RENAMED.get(k, k): k for k in manifests if k not in ONLY_IN_MANIFESTS}
    for k in sorted(ONLY_IN_MANIFESTS):
        if k not in manifests:
            fail("manifests/ has no %s any more: remove it from ONLY_IN_MANIFESTS in %s" % (show(k), __file__))
    for k in sorted(ONLY_IN_CHART):
        if k not in chart:
            fail("the chart renders no %s any more: remove it from ONLY_IN_CHART in %s" % (show(k), __file__))
    for k in sorted(set(chart) - set(mapped) - ONLY_IN_CHART):
        fail("%s is rendered by the chart's defaults but is not in manifests/" % show(k))
    for ck in sorted(set(mapped) - set(chart)):
        fail("%s is in manifests/ but the chart's defaults do not render it%s" % (
            show(mapped[ck]), " (expected as %s)" % show(ck) if ck != mapped[ck] else ""))

    # Field by field.
    equal = 0
    for ck, mk in sorted(mapped.items()):
        if ck not in chart:
            continue
        c, m = chart[ck], manifests[mk]
        what = show(mk) + (" (chart: %s)" % ck[2] if ck != mk else "")
        if ck != mk:  # compared under the mapping: the names differ on purpose
            c = dict(c, metadata=dict(c["metadata"], name=mk[2]))
        if mk == NETWORKPOLICY_ROLE:
            rules = (m.get("rules") or [])
            if NETWORKPOLICY_RULE not in rules:
                fail("%s: manifests/ no longer grant %s; update NETWORKPOLICY_RULE in %s" % (what, NETWORKPOLICY_RULE, __file__))
            compare(chart_np.get(ck, {}), m, what + " [chart with networkPolicy.enabled=true]")
            m = dict(m, rules=[r for r in rules if r != NETWORKPOLICY_RULE])
        if compare(c, m, what):
            equal += 1

    # manifests/Kustomization: names every manifests/*.yaml, and kustomize
    # builds exactly the objects of those files.
    kfile = os.path.join(manifests_dir, "Kustomization")
    try:
        with open(kfile) as f:
            kust = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        fail("manifests/Kustomization (kubectl apply -k manifests/): %s" % e)
        kust = {}
    listed = kust.get("resources") or []
    files = [os.path.basename(p) for p in manifest_files]
    for name in sorted(set(files) - set(listed)):
        fail("manifests/%s is not listed in manifests/Kustomization: kubectl apply -k manifests/ would leave it out" % name)
    for name in sorted(set(listed) - set(files)):
        fail("manifests/Kustomization lists %s, which is not a manifests/*.yaml file" % name)
    kustomized = index(load(kustomized_file), "kubectl kustomize manifests/")
    for k in sorted(set(kustomized) ^ set(manifests)):
        fail("%s: %s" % (show(k), "only in kubectl kustomize manifests/" if k in kustomized else "missing from kubectl kustomize manifests/"))

    if failures:
        print("%d difference(s) between the chart's defaults and manifests/ (above). Fix the side that is "
              "wrong, or, for a difference on purpose, add it with its reason to %s." % (len(failures), __file__))
        return 1
    print("ok: the chart's defaults render the %d objects of manifests/ (%d equal field by field; "
          "Namespace left to --create-namespace; the NetworkPolicy rule "
          "under networkPolicy.enabled); manifests/Kustomization lists all %d files"
          % (len(mapped) + len(ONLY_IN_MANIFESTS), equal, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
