package imagetest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// memberReady is the call-home of the warm pool's VM once it is proven:
// it names its member document, pools/{pool}/proxies/{name}, and no
// namespace.
var memberReady = map[string]any{"pool": poolName, "name": memberName, "uid": memberUID, "reason": "ready"}

// testWarmPool boots a VM of its own as a warm pool's member, created as
// the pool reconcile has it created (generation 0, no credentials, no
// source range, egress-pool in its metadata), checks that it serves no one
// and says so, then claims it for the test's proxy through the gcp
// provider's Reconfigure, as the reconciler does, and checks that it now
// serves that proxy and says whose it is. It boots a throwaway copy of
// rootfs in a network and stand-ins of its own, all gone when it returns,
// so the proxy's boots after it start as clean.
func testWarmPool(checks *checklist, ctx context.Context, rel Release, rootfs, runDir string, engine []byte) {
	t := checks.t
	r := setUp(t, ctx, rel, engine, NewTopology, asMember)
	root := filepath.Join(runDir, rel.Suite+"-member")
	if err := Copy(ctx, rootfs, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing %s: %v", root, err)
		}
	})
	c, ready := boot(t, ctx, r, root, filepath.Join(runDir, rel.Suite+"-member-console.log"))
	t.Logf("pool member: egress/ready %.1f s after nspawn started", ready.Time.Sub(c.Started).Seconds())

	checks.run("pool member: ready says generation 0, and no error", func(t *testing.T) { checkReady(t, r, c.Started, ready, 0) })
	checks.run("pool member: the gcp provider reads it as Running at generation 0", func(t *testing.T) {
		checkProviderRunning(t, ctx, r, 0)
	})
	checks.run("pool member: its metadata and its call-home name the pool and the member, no namespace", func(t *testing.T) {
		attrs := r.metadata.Attributes()
		if attrs[vmconfig.KeyPool] != poolName || attrs[vmconfig.KeyNamespace] != "" {
			t.Errorf("the provider's insert: %s %q, %s %q; want %q and none",
				vmconfig.KeyPool, attrs[vmconfig.KeyPool], vmconfig.KeyNamespace, attrs[vmconfig.KeyNamespace], poolName)
		}
		checkCallHome(t, ctx, r, memberReady)
	})
	checks.run("pool member: no source outside the VM can connect", func(t *testing.T) {
		// Its spec admits no range: the kernel's filter drops even the
		// range the claiming proxy will admit.
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if conn, err := r.topo.Internet.Dialer(ClientAddr)(dctx, "tcp", ProxyAddr()); err == nil {
			conn.Close()
			t.Errorf("%s opened a connection to an unclaimed VM's proxy port", ClientAddr)
		}
	})
	checks.run("pool member: on the VM itself, 407 without credentials and with any", func(t *testing.T) {
		checkMemberRefuses(t, ctx, r, c)
	})

	// The claim: the proxy's configuration (generation 1, its credentials
	// and range), its names, its uid as the label; egress-pool goes.
	publishes := len(r.pubsub.Publishes())
	handOver(t, ctx, r, 1, bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds})
	checks.run("claimed: egress/ready says the proxy's generation, and no error", func(t *testing.T) {
		got := r.metadata.GuestAttributes()
		if got[guestReady] != "1" || got[guestError] != "" {
			t.Errorf("egress/ready %q, egress/error %q; want 1 and none", got[guestReady], got[guestError])
		}
		checkProviderReads(t, ctx, r, 1)
	})
	checks.run("claimed: the proxy's credentials get through from its range", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("claimed: no credentials: 407", func(t *testing.T) { checkAuth(t, ctx, r, "", "") })
	checks.run("claimed: the call-home names the proxy's namespace, name and uid", func(t *testing.T) {
		checkCalledHomeAgain(t, ctx, r, publishes, proxyReady)
	})
	checks.run("claimed: egress-pool is gone from the metadata and the VM is labelled with the proxy's uid", func(t *testing.T) {
		attrs := r.metadata.Attributes()
		if v, ok := attrs[vmconfig.KeyPool]; ok {
			t.Errorf("%s is still in the metadata: %q", vmconfig.KeyPool, v)
		}
		for k, want := range map[string]string{vmconfig.KeyNamespace: namespace, vmconfig.KeyName: proxyName, vmconfig.KeyUID: uid} {
			if attrs[k] != want {
				t.Errorf("%s %q, want %q", k, attrs[k], want)
			}
		}
		labels := r.compute.SetLabelsCalls()
		if len(labels) != 1 || labels[0].GetLabels()[provider.LabelUID] != uid {
			t.Errorf("setLabels calls %v: want one, labelling %s=%s", labels, provider.LabelUID, uid)
		}
	})
}

// checkMemberRefuses: over loopback, the one source an unclaimed VM's
// filter and engine admit, a plain GET and a CONNECT get 407 without
// credentials, with the credentials a claim will bring and with made-up
// ones, and no request reaches its host. curl runs inside the VM.
func checkMemberRefuses(t *testing.T, ctx context.Context, r *run, c *Container) {
	proxyURL := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	tlsBefore, httpBefore := len(r.tlsHost.Hits()), len(r.httpHost.Hits())
	for _, user := range []string{"", r.creds.Username + ":" + r.creds.Password, "someone:" + randomHex(12)} {
		for _, req := range [][]string{
			{"-w", "%{http_code}", "http://" + HostPort(HTTPHostAddr, HTTPPort) + "/member"},
			{"-w", "%{http_connect}", "-p", "http://" + HostPort(TLSHostAddr, TLSPort) + "/"},
		} {
			args := []string{"curl", "-s", "-o", "/dev/null", "--max-time", "10", "-x", proxyURL}
			if user != "" {
				args = append(args, "-U", user)
			}
			// A 407 to a CONNECT is a failed tunnel to curl (exit 56): the
			// status it prints is what counts.
			out, err := c.Exec(ctx, append(args, req...)...)
			if got := strings.TrimSpace(string(out)); got != strconv.Itoa(http.StatusProxyAuthRequired) {
				name, _, _ := strings.Cut(user, ":")
				t.Errorf("%s as %q: %q (%v), want 407", req[len(req)-1], name, got, err)
			}
		}
	}
	if n := len(r.httpHost.Hits()) - httpBefore; n != 0 {
		t.Errorf("the HTTP host was reached %d times", n)
	}
	if n := len(r.tlsHost.Hits()) - tlsBefore; n != 0 {
		t.Errorf("the TLS host was reached %d times", n)
	}
}
