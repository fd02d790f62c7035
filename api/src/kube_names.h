// Internal to the api library: Kubernetes' rules for the names a job's
// fields become (its Services, Secrets, queue labels).
#pragma once

#include <string>

namespace ringmaster::internal {

// A DNS-1035 label: services are named after the job and must be one.
bool IsDns1035Label(const std::string& s);
// A DNS-1123 subdomain (Secret names): at most 253 characters, dot-separated
// labels of a-z, 0-9 and '-', each starting and ending with a letter or digit.
bool IsDns1123Subdomain(const std::string& s);
// Kubernetes' rule for Secret (and ConfigMap) keys: [-._a-zA-Z0-9]+, at most
// 253, and not ".", ".." or anything starting with "..".
bool IsSecretKey(const std::string& s);
// A LocalQueue's name also becomes a label value on every pod: a DNS-1123
// subdomain of at most 63 characters satisfies both rules.
bool IsQueueName(const std::string& s);

}  // namespace ringmaster::internal
