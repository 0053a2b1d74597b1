package vmstatus_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

const uid = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

func key(t *testing.T, fill byte) vmstatus.Key {
	t.Helper()
	k, err := vmstatus.NewKey([]byte(strings.Repeat(string(fill), 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// serve runs an engine whose status access is access, ready at
// generation 2, on a loopback port, and returns the port.
func serve(t *testing.T, access *vmconfig.StatusAccess) int32 {
	t.Helper()
	hash, _ := vmconfig.NewPasswordHash("a-tenant-password-of-24c")
	cfg := vmconfig.Config{Generation: 2, Listen: "127.0.0.1:0", Users: []vmconfig.User{{Name: "tenant", PasswordHash: hash}},
		AllowedSourceRanges: []string{"192.0.2.0/24"}, ConnectPorts: []int{443}, Status: access}
	s, err := engine.New(cfg, engine.Options{Readiness: func() vmconfig.Readiness { return vmconfig.Readiness{Generation: 2, Ready: true} }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestProbe: the prober reads a VM's status with the credential its key
// derives for the uid, from an address the VM admits for the status only;
// another key, another uid or a port where nothing listens is no answer.
func TestProbe(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	access, err := key(t, 'k').Access(uid, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	port := serve(t, access)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	cases := map[string]struct {
		reason  string
		key     vmstatus.Key
		uid     string
		port    int32
		want    vmstatus.Status
		wantErr string
	}{
		"the control plane": {
			reason: "the key that made the VM's configuration reads its status",
			key:    key(t, 'k'), uid: uid, port: port,
			want: vmstatus.Status{Generation: 2, Ready: true, Traffic: &provider.Traffic{ReportTime: at}},
		},
		"another key": {
			reason: "a key that did not make the configuration reads nothing",
			key:    key(t, 'x'), uid: uid, port: port,
			wantErr: "407 Proxy Authentication Required (credentials-wrong)",
		},
		"another uid": {
			reason: "a VM's credential is its uid's: another proxy's opens nothing here",
			key:    key(t, 'k'), uid: "00000000-0000-4000-8000-000000000000", port: port,
			wantErr: "407 Proxy Authentication Required (credentials-wrong)",
		},
		"nothing listens": {
			reason: "a VM whose engine does not listen yet has no answer",
			key:    key(t, 'k'), uid: uid, port: closedPort,
			wantErr: "connection refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return tc.key, nil }, Now: func() time.Time { return at }}
			got, err := p.Probe(context.Background(), "127.0.0.1", tc.port, tc.uid)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nerror %v, want one with %q", tc.reason, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), tc.key.Password(tc.uid)) {
					t.Errorf("the error names the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\n%v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAccess: the access page comes through the proxy port.
func TestAccess(t *testing.T) {
	k := key(t, 'k')
	access, _ := k.Access(uid, []string{"127.0.0.1/32"})
	port := serve(t, access)
	p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return k, nil }}
	page, err := p.Access(context.Background(), "127.0.0.1", port, uid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vmconfig.AccessPage{Lines: []vmconfig.AccessLine{}}, page, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the access page of an engine that carried nothing (-want +got):\n%s", diff)
	}
}

// TestAccessConfig: what a VM's configuration carries is a salted hash
// of the derived password, never the password, salted afresh each time,
// and the key's rules are held.
func TestAccessConfig(t *testing.T) {
	k := key(t, 'k')
	a, err := k.Access(uid, []string{"198.51.100.7/32"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Access(uid, []string{"198.51.100.7/32"})
	pw := k.Password(uid)
	switch {
	case a.User.Name != vmstatus.User || !vmconfig.Matches(a.User.PasswordHash, pw):
		t.Errorf("the status user %+v does not hold the derived password", a.User)
	case strings.Contains(a.User.PasswordHash, pw):
		t.Errorf("the configuration holds the password")
	case a.User.PasswordHash == b.User.PasswordHash:
		t.Errorf("two renderings share a salt")
	case len(pw) < 43:
		t.Errorf("the password %q is under 256 bits", pw)
	}
	if _, err := k.Access(uid, nil); err == nil {
		t.Error("an access with no source range was made")
	}
	if _, err := k.Access(uid, []string{"198.51.100.7"}); err == nil {
		t.Error("an access with a source that is not a CIDR was made")
	}
	if _, err := vmstatus.NewKey(make([]byte, 16)); err == nil {
		t.Error("a 128-bit key was taken")
	}
	if _, err := vmstatus.ParseKey("not base64!"); err == nil {
		t.Error("a key that is not base64 was taken")
	}
	if got, err := vmstatus.ParseKey("a2trazEya2trazEya2trazEya2trazEya2trazEya2s="); err != nil || got.Password(uid) == "" {
		t.Errorf("ParseKey of 32 base64 bytes: %v", err)
	}
}
