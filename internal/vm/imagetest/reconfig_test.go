package imagetest

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// outsiderRange is the range of OutsiderAddr, which a reconfiguration
// adds while it removes AllowedRange.
const outsiderRange = "203.0.113.0/24"

// reconfigure hands the booted proxy a new configuration of generation
// gen, as the reconciler does on a PATCH or a rotation (handOver).
func reconfigure(t *testing.T, ctx context.Context, r *run, gen int64, ranges []string, creds proxy.Credentials) {
	t.Helper()
	handOver(t, ctx, r, gen, bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: ranges, Credentials: creds})
}

// handOver gives the VM the test's proxy's configuration cfg of generation
// gen through the gcp provider's Reconfigure, as the reconciler does
// (instances.setLabels and instances.setMetadata on the Compute fake); has
// the metadata stand-in serve the items the provider wrote, in one step,
// as Compute Engine's metadata server would; and waits for the VM's agent
// to report gen in egress/ready.
func handOver(t *testing.T, ctx context.Context, r *run, gen int64, cfg bootstrap.Config) {
	t.Helper()
	cfg.Generation = gen
	r.withDataPlane(&cfg)
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.withIPv6(&engine)
	r.engine = engine
	calls := len(r.compute.SetMetadataCalls())
	err = r.provider.Reconfigure(ctx, r.providerID, provider.ReconfigureRequest{UID: uid, Namespace: namespace, ProxyName: proxyName, Engine: &engine})
	if err != nil {
		t.Fatalf("generation %d: the gcp provider's Reconfigure: %v", gen, err)
	}
	sent := r.compute.SetMetadataCalls()
	if len(sent) != calls+1 {
		t.Fatalf("generation %d: the provider made %d setMetadata calls, want 1", gen, len(sent)-calls)
	}
	items := map[string]string{}
	for _, it := range sent[len(sent)-1].GetItems() {
		items[it.GetKey()] = it.GetValue()
	}
	changes := maps.Clone(items)
	for k := range r.metadata.Attributes() {
		if _, kept := items[k]; !kept {
			changes[k] = "" // instances.setMetadata replaces the whole list
		}
	}
	since := time.Now()
	r.metadata.SetAttributes(changes)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		w, err := r.metadata.WaitGuest(wctx, since, guestReady, guestError)
		if err != nil {
			t.Fatalf("generation %d: no egress/ready: %v", gen, err)
		}
		if w.Key == guestError {
			t.Fatalf("generation %d: egress/error %q", gen, w.Value)
		}
		if w.Value == strconv.FormatInt(gen, 10) {
			return
		}
		since = w.Time.Add(time.Nanosecond)
	}
}

// testReconfigure applies, on the booted VM, a reconfiguration that adds
// a range and removes one (generation 2), then a credentials rotation
// (generation 3), through the metadata stand-in, and checks what a client
// sees after each.
func testReconfigure(checks *checklist, ctx context.Context, r *run) {
	t := checks.t
	// A tunnel from the range the change removes: the engine closes it
	// (the kernel filter drops its packets from that moment anyway).
	_, removedTunnel, err := r.client("client", r.creds.Username, r.creds.Password).Connect(ctx, HostPort(TLSHostAddr, TLSPort))
	if err != nil || removedTunnel == nil {
		t.Fatalf("a tunnel from %s before the change: %v", ClientAddr, err)
	}
	defer removedTunnel.Close()
	publishes := len(r.pubsub.Publishes())
	reconfigure(t, ctx, r, 2, []string{outsiderRange}, r.creds)
	checks.run("reconfigured: a client from the added range gets through", func(t *testing.T) {
		ctx, cancel := CheckTimeout(ctx)
		defer cancel()
		if _, err := r.client("outsider", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/added"); err != nil {
			t.Error(err)
		}
	})
	checks.run("reconfigured: a client from the removed range does not", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if status, c, err := r.client("client", r.creds.Username, r.creds.Password).Connect(ctx, HostPort(TLSHostAddr, TLSPort)); err == nil {
			c.Close()
			t.Errorf("a CONNECT from %s after its range was removed: status %d", ClientAddr, status)
		}
		if _, err := GetOverTunnel(ctx, removedTunnel, TLSHostName, r.roots, "/removed"); err == nil {
			t.Errorf("a tunnel from the removed range still carries data")
		}
	})
	checks.run("reconfigured: the VM called home (ready) with the new generation", func(t *testing.T) {
		checkCalledHomeAgain(t, ctx, r, publishes, proxyReady)
	})

	// The rotation: new credentials, the same ranges.
	open := r.client("outsider", r.creds.Username, r.creds.Password)
	status, tunnel, err := open.Connect(ctx, HostPort(TLSHostAddr, TLSPort))
	if err != nil || status != http.StatusOK {
		t.Fatalf("a tunnel before the rotation: %d %v", status, err)
	}
	defer tunnel.Close()
	old := r.creds
	fresh, err := proxy.NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	publishes = len(r.pubsub.Publishes())
	reconfigure(t, ctx, r, 3, []string{outsiderRange}, fresh)
	checks.run("rotated: the old password gets 407", func(t *testing.T) {
		ctx, cancel := CheckTimeout(ctx)
		defer cancel()
		status, c, err := r.client("outsider", old.Username, old.Password).Connect(ctx, HostPort(TLSHostAddr, TLSPort))
		if c != nil {
			c.Close()
		}
		if err != nil || status != http.StatusProxyAuthRequired {
			t.Errorf("the old password: %d %v, want 407", status, err)
		}
	})
	checks.run("rotated: the new password works", func(t *testing.T) {
		ctx, cancel := CheckTimeout(ctx)
		defer cancel()
		if _, err := r.client("outsider", fresh.Username, fresh.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/rotated"); err != nil {
			t.Error(err)
		}
	})
	checks.run("OldPasswordTunnelClosed", func(t *testing.T) {
		// Revocation: the engine closed the tunnel opened with the old
		// password when the new configuration was applied, before
		// egress/ready said 3; the read sees its end at once.
		tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := tunnel.Read(make([]byte, 1))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the tunnel opened with the old password is still open after the rotation: read %d bytes, %v", n, err)
		}
	})
	checks.run("rotated: egress/ready says 3 and the VM called home", func(t *testing.T) {
		if got := r.metadata.GuestAttributes()[guestReady]; got != "3" {
			t.Errorf("egress/ready %q, want 3", got)
		}
		checkCalledHomeAgain(t, ctx, r, publishes, proxyReady)
	})
	r.creds = fresh
}

// checkCalledHomeAgain: a publish after the first `before` ones reached
// Pub/Sub with the message want.
func checkCalledHomeAgain(t *testing.T, ctx context.Context, r *run, before int, want map[string]any) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, p := range r.pubsub.Publishes()[before:] {
			if p.Status != http.StatusOK || len(p.Data) != 1 {
				continue
			}
			if m, err := decodeJSON(p.Data[0]); err == nil && cmp.Equal(m, want) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("no call-home %v after the change; publishes: %+v", want, r.pubsub.Publishes()[before:])
}
