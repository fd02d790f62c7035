#!/usr/bin/env bash
# The API server refuses invalid jobs with the CRD's CEL messages.
. "$(dirname "$0")/lib_operator.sh"
setup

refuse() {  # WANT-MESSAGE YAML
  local out
  if out=$(k -n "$NS" apply -f - 2>&1 <<<"$2"); then fail "an invalid job was accepted (want: $1)"; fi
  grep -qF "$1" <<<"$out" || fail "refusal does not say '$1': $out"
}
base=$(job_yaml ok 2 Never 1)
k -n "$NS" apply --dry-run=server -f - <<<"$base" >/dev/null || fail "a valid job was refused"
refuse "Chief replicas must be 0 or 1" "$(sed 's/replicas: 1/replicas: 2/' <<<"$base")"
refuse "restartPolicy must be one of Never, OnFailure, Always, ExitCode" "$(sed 's/restartPolicy: Never/restartPolicy: Sometimes/' <<<"$base")"
refuse "implementation must be one of AUTO, RING, NCCL" "$(job_yaml bad 1 Never 0 '{}' 'communication: {implementation: FAST}')"
refuse "bytesPerPack must be >= 0" "$(job_yaml bad 1 Never 0 '{}' 'communication: {bytesPerPack: -1}')"
refuse "timeoutSeconds must be >= 0" "$(job_yaml bad 1 Never 0 '{}' 'communication: {timeoutSeconds: -5}')"
refuse "port must be 1-65535" "$(job_yaml bad 1 Never 0 '{}' 'port: 70000')"
refuse "keySecretRef.name must be a DNS-1123 subdomain" "$(job_yaml bad 1 Never 0 '{}' 'communication: {keySecretRef: {name: My_Secret}}')"
refuse "keySecretRef.key must be a Secret key" "$(job_yaml bad 1 Never 0 '{}' 'communication: {keySecretRef: {name: s, key: a/b}}')"
refuse "keySecretRef.key must be a Secret key" "$(job_yaml bad 1 Never 0 '{}' 'communication: {keySecretRef: {name: s, key: ..k}}')"
refuse "spec.communication.keySecretRef.name: Required value" "$(job_yaml bad 1 Never 0 '{}' 'communication: {keySecretRef: {key: k}}')"
k -n "$NS" apply --dry-run=server -f - <<<"$(job_yaml ok 1 Never 0 '{}' 'communication: {keySecretRef: {name: team.keys-1, key: Job_Key.v2}}')" >/dev/null ||
  fail "a valid keySecretRef was refused"
refuse "cleanPodPolicy must be one of All, Running, None" "$(job_yaml bad 1 Never 0 '{cleanPodPolicy: Sometimes}')"
pass "invalid jobs refused with the CEL messages"
