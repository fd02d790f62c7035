#!/usr/bin/env bash
# The job key (issue 15): the operator creates <job>-ringmaster-key (32
# random bytes, controlled by the job) before the pods, every container
# mounts it read-only with RINGMASTER_JOB_KEY_FILE naming the file, a
# recreated pod gets the same key, and the garbage collector deletes it with
# the job; keySecretRef mounts the user's Secret and generates none; a Secret
# of that name the job does not control holds the pods back; --network-policy
# adds a NetworkPolicy controlled by the job. The operators here run as
# manifests/' service account (a token, not the admin certificate), so the
# RBAC rules are the ones exercised.
. "$(dirname "$0")/lib_operator.sh"
setup

# A kubeconfig for manifests/' service account (a token), on the testbed.
token=$(sa_token) || fail "cannot create a token"
testbed_kubeconfig "$LOGDIR/sa.kubeconfig" "{token: \"$token\"}"
# start_operator passes --kubeconfig $KUBECONFIG first; a later one wins.
start_sa_operator() { start_operator "$1" --leader-elect=false --kubeconfig "$LOGDIR/sa.kubeconfig" "${@:2}"; }

start_sa_operator op
job_yaml keyed 2 ExitCode 1 '{backoffLimit: 3}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 keyed 3
job_uid=$(k -n "$NS" get djob keyed -o 'jsonpath={.metadata.uid}')
secret=keyed-ringmaster-key
expect_eq "Secret type" "$(k -n "$NS" get secret $secret -o 'jsonpath={.type}')" Opaque
expect_eq "Secret items" "$(k -n "$NS" get secret $secret -o 'go-template={{range $k, $v := .data}}{{$k}} {{end}}')" "key "
key=$(k -n "$NS" get secret $secret -o 'jsonpath={.data.key}')
expect_eq "key length" "$(base64 -d <<<"$key" | wc -c)" 32
owner=$(k -n "$NS" get secret $secret -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].uid}/{.metadata.ownerReferences[0].controller}/{.metadata.ownerReferences[0].blockOwnerDeletion}')
expect_eq "Secret's owner" "$owner" "DistributedJob/keyed/$job_uid/true/true"
k -n "$NS" get events --field-selector involvedObject.name=keyed -o 'jsonpath={.items[*].reason}' |
  grep -qw SuccessfulCreateKeySecret || fail "no SuccessfulCreateKeySecret event"
pass "Secret $secret: Opaque, one 32-byte item 'key', controlled by the job"

# check_pods JOB SECRET ITEM: every container of every pod mounts the key.
check_pods() {
  local job=$1 want_secret=$2 want_item=$3 pod n=0
  for pod in $(k -n "$NS" get pods -l "ringmaster.io/job-name=$job" -o name); do
    n=$((n + 1))
    expect_eq "$pod volume" \
      "$(k -n "$NS" get "$pod" -o 'jsonpath={.spec.volumes[?(@.name=="ringmaster-job-key")].secret}')" \
      "{\"defaultMode\":292,\"items\":[{\"key\":\"$want_item\",\"path\":\"key\"}],\"secretName\":\"$want_secret\"}"
    local containers mounts envs
    containers=$(k -n "$NS" get "$pod" -o 'jsonpath={range .spec.containers[*]}{.name} {end}')
    for c in $containers; do
      mounts=$(k -n "$NS" get "$pod" -o "jsonpath={.spec.containers[?(@.name==\"$c\")].volumeMounts[?(@.name==\"ringmaster-job-key\")]}")
      expect_eq "$pod/$c mount" "$mounts" '{"mountPath":"/var/run/secrets/ringmaster.io/job-key","name":"ringmaster-job-key","readOnly":true}'
      envs=$(k -n "$NS" get "$pod" -o "jsonpath={.spec.containers[?(@.name==\"$c\")].env[?(@.name==\"RINGMASTER_JOB_KEY_FILE\")].value}")
      expect_eq "$pod/$c RINGMASTER_JOB_KEY_FILE" "$envs" /var/run/secrets/ringmaster.io/job-key/key
    done
  done
  [ "$n" -gt 0 ] || fail "job $job has no pods"
}
check_pods keyed $secret key
pass "every container of the 3 pods mounts $secret read-only (0444) with RINGMASTER_JOB_KEY_FILE"

uid=$(pod_uid keyed-worker-1)
pod_exit keyed-worker-1 137
wait_for 60 "worker 1 to be recreated" bash -c "u=\$(kubectl -n $NS get pod keyed-worker-1 -o jsonpath={.metadata.uid} 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid ]"
expect_eq "key after a restart" "$(k -n "$NS" get secret $secret -o 'jsonpath={.data.key}')" "$key"
check_pods keyed $secret key
pass "a recreated pod mounts the same key (the Secret is never replaced)"
if k -n "$NS" get networkpolicy keyed-ringmaster >/dev/null 2>&1; then fail "a NetworkPolicy without --network-policy"; fi

# keySecretRef: the user's Secret, nothing generated.
k -n "$NS" create secret generic team-key --from-literal=k1=0123456789abcdef0123456789abcdef >/dev/null
job_yaml byref 1 Never 1 '{}' 'communication: {keySecretRef: {name: team-key, key: k1}}' | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 byref 2
check_pods byref team-key k1
if k -n "$NS" get secret byref-ringmaster-key >/dev/null 2>&1; then fail "a Secret was generated despite keySecretRef"; fi
pass "keySecretRef: the pods mount team-key's item k1 as the key file; no Secret generated"

# A Secret of the generated name that the job does not control: no pods
# until it is gone (its key is not the job's to hand out).
k -n "$NS" create secret generic stale-ringmaster-key --from-literal=key=not-this-jobs >/dev/null
job_yaml stale 1 Never 0 | k -n "$NS" apply -f - >/dev/null
wait_for 30 "a FailedCreateKeySecret event" bash -c \
  "kubectl -n $NS get events --field-selector involvedObject.name=stale -o 'jsonpath={.items[*].reason}' | grep -qw FailedCreateKeySecret"
expect_eq "pods while a foreign Secret holds the name" "$(pod_count stale)" 0
k -n "$NS" delete secret stale-ringmaster-key >/dev/null
wait_pods_running 90 stale 1
owner=$(k -n "$NS" get secret stale-ringmaster-key -o 'jsonpath={.metadata.ownerReferences[0].name}')
expect_eq "the new Secret's owner" "$owner" stale
pass "a Secret the job does not control holds its pods back; once gone, the job's own is created"

k -n "$NS" delete djob keyed >/dev/null
wait_for 60 "the garbage collector to delete $secret" bash -c "! kubectl -n $NS get secret $secret >/dev/null 2>&1"
pass "deleting the job garbage-collects its key Secret"

# --network-policy: a policy per job, controlled by it.
kill_operator op TERM
start_sa_operator fenced-op --network-policy
job_yaml fenced 2 Never 0 | k -n "$NS" apply -f - >/dev/null
wait_pods_running 90 fenced 2
np=fenced-ringmaster
fenced_uid=$(k -n "$NS" get djob fenced -o 'jsonpath={.metadata.uid}')
owner=$(k -n "$NS" get networkpolicy $np -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].uid}/{.metadata.ownerReferences[0].controller}')
expect_eq "NetworkPolicy's owner" "$owner" "DistributedJob/$fenced_uid/true"
expect_eq "podSelector" "$(k -n "$NS" get networkpolicy $np -o 'jsonpath={.spec.podSelector.matchLabels}')" '{"ringmaster.io/job-name":"fenced"}'
expect_eq "policyTypes" "$(k -n "$NS" get networkpolicy $np -o 'jsonpath={.spec.policyTypes}')" '["Ingress"]'
expect_eq "ingress" "$(k -n "$NS" get networkpolicy $np -o 'jsonpath={.spec.ingress}')" \
  '[{"from":[{"podSelector":{"matchLabels":{"ringmaster.io/job-name":"fenced"}}}]}]'
check_pods fenced fenced-ringmaster-key key
k -n "$NS" delete djob fenced >/dev/null
wait_for 60 "the garbage collector to delete $np" bash -c "! kubectl -n $NS get networkpolicy $np >/dev/null 2>&1"
pass "--network-policy: $np admits ingress only from the job's pods, is controlled by the job and goes with it"
