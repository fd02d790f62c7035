// Command coredns is CoreDNS with only the plugins the testbed's real node
// needs: cluster.local from the API server (kubernetes), served on the
// bridge's address only (bind), with health and readiness endpoints on
// 127.0.0.1 (health, ready), a cache, and errors (and log, for debugging)
// in its log. No forwarding: every other name is answered NXDOMAIN
// (template), so that a resolver goes on through its search list.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// The plugins above, in the order of CoreDNS's own plugin.cfg (the order a
// request passes through them).
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "cache", "template", "kubernetes"}
}

func main() {
	coremain.Run()
}
