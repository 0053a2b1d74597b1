package loopback_test

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// TestChange: a fake's VM whose user-data is changed in place (an Azure
// VM's userData) serves the new configuration at once: the new user is
// carried, and the one removed is refused and her open tunnel closed, as
// the VM's agent's reload does; a user-data of the generation served
// changes nothing, and one that is not the renderer's changes nothing
// and is an error; a VM that serves nothing is not changed.
func TestChange(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	echoPort := int32(echo.Addr().(*net.TCPAddr).Port)
	userData := func(gen int64, users ...string) string {
		cfg, err := bootstrap.EngineConfig(bootstrap.Config{Port: int32(port), AllowedSourceRanges: []string{"127.0.0.0/8"},
			ConnectPorts: []int32{echoPort}, Credentials: proxy.Credentials{Username: users[0], Password: users[0] + "0123456789abcdef"}, Generation: gen})
		if err != nil {
			t.Fatal(err)
		}
		ud, err := cloudinit.Render(cfg, cloudinit.Settings{EngineURL: "http://192.0.43.13/egress-proxy", EngineSHA256: "ab"})
		if err != nil {
			t.Fatal(err)
		}
		return ud
	}
	vms := loopback.New(loopback.Serve{AllowDestinations: []string{"127.0.0.1/32"}})
	t.Cleanup(vms.StopAll)
	vms.Boot("vm-1", "127.0.0.1", userData(1, "alice"))
	vms.Running("vm-1")
	proxyAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	connect := func(user string) (int, net.Conn) {
		c, err := net.Dial("tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "CONNECT "+echo.Addr().String()+" HTTP/1.1\r\nHost: "+echo.Addr().String()+"\r\nProxy-Authorization: Basic "+
			base64.StdEncoding.EncodeToString([]byte(user+":"+user+"0123456789abcdef"))+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, c
	}
	echoes := func(c net.Conn) bool {
		io.WriteString(c, "ping")
		b := make([]byte, 4)
		_, err := io.ReadFull(c, b)
		return err == nil && string(b) == "ping"
	}

	_, aliceTunnel := connect("alice")
	type state struct {
		Errors              []bool
		Alice, Bob          int
		AliceTunnelOpen     bool
		SameGenerationError bool
	}
	var got state
	got.Errors = append(got.Errors, vms.Change("vm-1", userData(2, "bob")) != nil)
	got.Alice, _ = connect("alice")
	got.Bob, _ = connect("bob")
	got.AliceTunnelOpen = echoes(aliceTunnel)
	got.Errors = append(got.Errors, vms.Change("vm-1", "#!/bin/sh\n") != nil, vms.Change("vm-gone", userData(3, "carol")) != nil)
	// The same generation with another user: not applied.
	got.SameGenerationError = vms.Change("vm-1", userData(2, "carol")) != nil
	if carol, _ := connect("carol"); carol != http.StatusProxyAuthRequired {
		t.Errorf("carol, in a user-data of the generation served: %d, want 407 (not applied)", carol)
	}
	want := state{Errors: []bool{false, true, false}, Alice: http.StatusProxyAuthRequired, Bob: http.StatusOK}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the changes (-want +got):\n%s", diff)
	}
}
