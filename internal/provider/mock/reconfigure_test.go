package mock_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

const warmUID = "0a0a0a0a-0000-4000-8000-00000000000a"

// claim is the Reconfigure a claim of a warm VM makes: a proxy's uid and
// its configuration of generation 2.
var claim = provider.ReconfigureRequest{
	UID: "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", Namespace: "team-a", ProxyName: "egress-1",
	Engine: &vmconfig.Config{Generation: 2, Listen: ":3128", ConnectPorts: []int{443}},
}

// TestReconfigure: a VM reports the generation it booted with once
// Running (0 for a warm one), and a Reconfigure's generation once
// ReconfigureDelay has passed, when it calls home naming its new owner,
// once; a repeat, or a reconfiguration overtaken by another, calls nobody;
// one during the boot is what the boot's own call-home reports.
func TestReconfigure(t *testing.T) {
	type observed struct {
		Generations []int64 // Get's, before the delay ends and after
		UID         string
		Calls       []mock.CallHome
		// Refused and BootError are what Get says of a refusal at the end.
		Refused   int64
		BootError string
	}
	// The claimed VM keeps its own name, which its identity token names.
	home := mock.CallHome{Namespace: "team-a", Name: "egress-1", UID: claim.UID, Instance: provider.NameFromUID(warmUID)}
	const refusal = "generation 2: the self-test failed; the configuration served before is served still"
	refusedHome := home
	refusedHome.BootError = refusal
	cases := map[string]struct {
		reason string
		// boot lets the VM boot before the reconfigurations.
		boot bool
		// refuse is how many reconfigurations the VMs' agents refuse.
		refuse int
		reqs   []provider.ReconfigureRequest
		want   observed
	}{
		"Refused": {
			reason: "an agent that refuses the change keeps serving generation 0, says it refused 2 and why, and calls home with it",
			boot:   true, refuse: 1, reqs: []provider.ReconfigureRequest{claim},
			want: observed{Generations: []int64{0, 0}, UID: claim.UID, Calls: []mock.CallHome{refusedHome}, Refused: 2, BootError: refusal},
		},
		"RefusalNotWhileBooting": {
			reason: "a VM still booting takes the change into its boot: no agent refuses it",
			refuse: 1, reqs: []provider.ReconfigureRequest{claim},
			want: observed{Generations: []int64{2, 2}, UID: claim.UID, Calls: []mock.CallHome{home}},
		},
		"Claimed": {
			reason: "a warm VM serves generation 0, then the claim's after the delay, and calls home as its new owner",
			boot:   true, reqs: []provider.ReconfigureRequest{claim},
			want: observed{Generations: []int64{0, 2}, UID: claim.UID, Calls: []mock.CallHome{home}},
		},
		"Repeated": {
			reason: "the same request again changes and schedules nothing",
			boot:   true, reqs: []provider.ReconfigureRequest{claim, claim},
			want: observed{Generations: []int64{0, 2}, UID: claim.UID, Calls: []mock.CallHome{home}},
		},
		"Overtaken": {
			reason: "a second change before the first is applied: only the last is reported, once",
			boot:   true, reqs: []provider.ReconfigureRequest{claim, withGeneration(claim, 3)},
			want: observed{Generations: []int64{0, 3}, UID: claim.UID, Calls: []mock.CallHome{home}},
		},
		"DuringBoot": {
			reason: "a VM changed while it boots boots with the change: its boot's call-home names the new owner",
			reqs:   []provider.ReconfigureRequest{claim},
			want:   observed{Generations: []int64{2, 2}, UID: claim.UID, Calls: []mock.CallHome{home}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(epoch)
			var calls []mock.CallHome
			p := mock.New(mock.Options{Clock: clk, ProvisioningDelay: 10 * time.Second, ReconfigureDelay: time.Second,
				CallHome: func(c mock.CallHome) { calls = append(calls, c) }})
			p.RefuseReconfigures(tc.refuse, "the self-test failed")
			req := request(warmUID)
			req.Namespace, req.ProxyName, req.Pool = "", "pool-member", "ci"
			req.Engine = &vmconfig.Config{Generation: 0, Listen: ":3128"}
			id, err := p.Create(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.boot {
				clk.Advance(10 * time.Second)
				// A warm VM's boot calls home as its pool's member.
				if diff := cmp.Diff([]mock.CallHome{{Pool: "ci", Name: "pool-member", UID: warmUID, Instance: provider.NameFromUID(warmUID)}}, calls); diff != "" {
					t.Errorf("the warm VM's boot call-home (-want +got):\n%s", diff)
				}
				calls = nil
			}
			for _, r := range tc.reqs {
				if err := p.Reconfigure(ctx, id, r); err != nil {
					t.Fatal(err)
				}
			}
			var got observed
			if tc.boot {
				clk.Advance(999 * time.Millisecond)
			} else {
				clk.Advance(10 * time.Second)
			}
			in, _ := p.Get(ctx, id)
			got.Generations = append(got.Generations, in.Generation)
			clk.Advance(time.Hour)
			in, _ = p.Get(ctx, id)
			got.Generations, got.UID, got.Calls = append(got.Generations, in.Generation), in.UID, calls
			got.Refused, got.BootError = in.RefusedGeneration, in.BootError
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			if n := p.Calls(mock.MethodReconfigure); n != len(tc.reqs) {
				t.Errorf("Calls(Reconfigure) = %d, want %d", n, len(tc.reqs))
			}
		})
	}
}

func withGeneration(r provider.ReconfigureRequest, g int64) provider.ReconfigureRequest {
	e := *r.Engine
	e.Generation = g
	r.Engine = &e
	return r
}

// TestReconfigureFaults: an injected fault fails Reconfigure as it does
// the other calls: before its effect, or after it (a lost answer); a VM
// gone, or being deleted, is ErrNotFound.
func TestReconfigureFaults(t *testing.T) {
	boom := provider.NewError(provider.KindTransient, "reconfigure", "", errors.New("backend error"))
	cases := map[string]struct {
		reason  string
		arrange func(p *mock.Provider, id string)
		wantErr error
		wantUID string
	}{
		"Before": {reason: "refused: nothing changes",
			arrange: func(p *mock.Provider, _ string) { p.FailNext(mock.MethodReconfigure, 1, boom) },
			wantErr: boom, wantUID: warmUID},
		"AfterEffect": {reason: "done, and the answer lost",
			arrange: func(p *mock.Provider, _ string) { p.FailNextAfterEffect(mock.MethodReconfigure, 1, boom) },
			wantErr: boom, wantUID: claim.UID},
		"Deleting": {reason: "a VM being deleted takes no configuration",
			arrange: func(p *mock.Provider, id string) { p.Delete(context.Background(), id) },
			wantErr: provider.ErrNotFound},
		"Lost": {reason: "a VM lost outside the system is not found",
			arrange: func(p *mock.Provider, id string) { p.Lose(id) },
			wantErr: provider.ErrNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p := mock.New(mock.Options{Clock: clock.NewFake(epoch), DeletionDelay: time.Minute})
			id, err := p.Create(ctx, request(warmUID))
			if err != nil {
				t.Fatal(err)
			}
			tc.arrange(p, id)
			if err := p.Reconfigure(ctx, id, claim); !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: Reconfigure: %v, want %v", tc.reason, err, tc.wantErr)
			}
			if tc.wantUID == "" {
				return
			}
			if in, _ := p.Get(ctx, id); in.UID != tc.wantUID {
				t.Errorf("%s: uid %s, want %s", tc.reason, in.UID, tc.wantUID)
			}
		})
	}
}

// TestServeReconfigure: with Serve, Reconfigure changes the running
// engine's credentials and CONNECT ports live, on the same address: the
// old password gets 407, the new one gets through, and a tunnel opened
// before the change keeps carrying bytes.
func TestServeReconfigure(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				c.Write(buf[:n])
				n, _ = c.Read(buf)
				c.Write(buf[:n])
			}()
		}
	}()
	echoPort := echo.Addr().(*net.TCPAddr).Port
	hash := func(pw string) string {
		h, err := vmconfig.NewPasswordHash(pw)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	const oldPW, newPW = "oldPasswordOf24Chars0000", "newPasswordOf24Chars0000"
	cfg := func(gen int64, pw string) *vmconfig.Config {
		return &vmconfig.Config{Generation: gen, Listen: ":3128", Users: []vmconfig.User{{Name: "u", PasswordHash: hash(pw)}},
			AllowedSourceRanges: []string{"127.0.0.1/32"}, ConnectPorts: []int{echoPort}, DenyDestinations: vmconfig.DefaultDenyDestinations}
	}
	ctx := context.Background()
	p := mock.New(mock.Options{Clock: clock.NewFake(epoch), Serve: &mock.Serve{AllowDestinations: []string{"127.0.0.1/32"}}})
	defer p.Close()
	req := request(warmUID)
	req.Port, req.Engine = int32(freePort(t)), cfg(1, oldPW)
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := p.Get(ctx, id)
	endpoint := net.JoinHostPort(before.IP, itoa(int(req.Port)))
	open, status := connect(t, endpoint, oldPW, echoPort)
	if status != "200" {
		t.Fatalf("CONNECT with the first password: %s", status)
	}
	defer open.Close()
	exchange(t, open, "before")

	r := claim
	r.Engine = cfg(2, newPW)
	if err := p.Reconfigure(ctx, id, r); err != nil {
		t.Fatal(err)
	}
	after, _ := p.Get(ctx, id)
	type answers struct {
		IP                  string
		OldPassword, NewOne string
		// The tunnel opened with the old password: revoked, closed.
		OldPasswordTunnel string
	}
	got := answers{IP: after.IP, OldPasswordTunnel: exchange(t, open, "after")}
	for pw, status := range map[string]*string{oldPW: &got.OldPassword, newPW: &got.NewOne} {
		c, s := connect(t, endpoint, pw, echoPort)
		if c != nil {
			c.Close()
		}
		*status = s
	}
	want := answers{IP: before.IP, OldPassword: "407", NewOne: "200", OldPasswordTunnel: "read: EOF"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the served engine after Reconfigure (-want +got):\n%s", diff)
	}
}

// connect opens a CONNECT tunnel through the proxy at endpoint to the
// loopback port, as user u with password, and returns it (on 200) and the
// status code the proxy answered.
func connect(t *testing.T, endpoint, password string, port int) (net.Conn, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", endpoint, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	target := net.JoinHostPort("127.0.0.1", itoa(port))
	auth := base64.StdEncoding.EncodeToString([]byte("u:" + password))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target, auth)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	code := strconv.Itoa(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, code
	}
	return c, code
}

// exchange sends msg through a tunnel to the echo server and returns what
// came back.
func exchange(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		return "write: " + err.Error()
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return "read: " + err.Error()
	}
	return string(buf)
}

// TestRefusalClearedByTheNextServed: a refusal stays said until the VM
// serves a later configuration, as the agent deletes egress/error only
// then.
func TestRefusalClearedByTheNextServed(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk, ReconfigureDelay: time.Second})
	req := request(warmUID)
	req.Engine = &vmconfig.Config{Generation: 1, Listen: ":3128"}
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p.Get(ctx, id) // booted: no provisioning delay
	p.RefuseReconfigures(1, "the filter does not load")
	type seen struct {
		Generation, Refused int64
		BootError           string
	}
	var got []seen
	for _, g := range []int64{2, 3} {
		if err := p.Reconfigure(ctx, id, withGeneration(claim, g)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		in, _ := p.Get(ctx, id)
		got = append(got, seen{in.Generation, in.RefusedGeneration, in.BootError})
	}
	want := []seen{{1, 2, "generation 2: the filter does not load; the configuration served before is served still"}, {3, 0, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a refused generation 2, then generation 3 (-want +got):\n%s", diff)
	}
}
