//go:build tools

// Package tools names the command scripts/testbed builds, so that
// `go mod tidy` keeps its dependencies in go.mod and go.sum.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
