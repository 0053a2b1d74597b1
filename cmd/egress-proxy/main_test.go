package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestSignals runs the command's loop in this process: SIGHUP applies a
// rewritten file (the old password is refused, the new one served), a
// file that does not load leaves the rules in force, SIGTERM drains and
// returns; no log line holds a password.
func TestSignals(t *testing.T) {
	target := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("reached")) })}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go target.Serve(tl)
	defer target.Close()
	targetPort := tl.Addr().(*net.TCPAddr).Port
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()

	path := filepath.Join(t.TempDir(), "engine.json")
	write := func(user, password string) {
		hash, err := vmconfig.NewPasswordHash(password)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(vmconfig.Config{
			Listen: listen, Users: []vmconfig.User{{Name: user, PasswordHash: hash}},
			AllowedSourceRanges: []string{"127.0.0.1/32"}, ConnectPorts: []int{targetPort},
			DenyDestinations: vmconfig.DefaultDenyDestinations, AllowDestinations: []string{"127.0.0.1/32"},
		})
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first", "firstPasswordOf24Chars00")
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(logging.New(&logs, slog.LevelDebug), path, "", "", time.Second, false) }()

	get := func(user, password string) string {
		u := &url.URL{Scheme: "http", Host: listen, User: url.UserPassword(user, password)}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}, Timeout: 30 * time.Second}
		resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(targetPort) + "/")
		if err != nil {
			return "error"
		}
		resp.Body.Close()
		return resp.Status
	}
	for deadline := time.Now().Add(30 * time.Second); get("first", "firstPasswordOf24Chars00") == "error"; {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never served:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	hup := func() {
		// The reload is logged once done, either way.
		n := strings.Count(logs.String(), "configuration applied") + strings.Count(logs.String(), "reload refused")
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "configuration applied")+strings.Count(logs.String(), "reload refused") == n; {
			if time.Now().After(deadline) {
				t.Fatalf("SIGHUP was not handled:\n%s", logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write("second", "secondPasswordOf24Chars0")
	hup()
	type answers struct{ Old, New, AfterABadFile string }
	got := answers{Old: get("first", "firstPasswordOf24Chars00"), New: get("second", "secondPasswordOf24Chars0")}
	os.WriteFile(path, []byte(`{"listen":`), 0o600)
	hup()
	got.AfterABadFile = get("second", "secondPasswordOf24Chars0")
	want := answers{Old: "407 Proxy Authentication Required", New: "200 OK", AfterABadFile: "200 OK"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers across reloads: -want +got:\n%s", diff)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("SIGTERM did not stop the proxy:\n%s", logs.String())
	}
	for _, secret := range []string{"firstPasswordOf24Chars00", "secondPasswordOf24Chars0", "Basic "} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a log line holds %q:\n%s", secret, logs.String())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
