// Package emulatortest gives tests the real Firestore and Pub/Sub emulators.
//
// The emulators take seconds to start, so they are started once: by
// `make test`, which runs every test binary with FIRESTORE_EMULATOR_HOST and
// PUBSUB_EMULATOR_HOST already set, or, when a package's tests run on their
// own (go test ./internal/store), once per test binary by Main. Tests share
// the emulators and keep apart by project: ProjectID gives each test a
// project of its own, so no test sees another's documents or topics.
//
// Where the emulators are not installed, a test that needs them is skipped
// with the install command — except under CI (CI=true), where that is a
// failure, never a silent skip.
package emulatortest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/egress-proxies/egress/emulators/emulator"
)

var (
	mu        sync.Mutex
	started   []*emulator.Process
	startErrs = map[emulator.Kind]error{}
)

// Main runs a test binary's tests and stops any emulator they started. Call
// it from TestMain: func TestMain(m *testing.M) { emulatortest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for _, p := range started {
		p.Stop()
	}
	mu.Unlock()
	os.Exit(code)
}

// Firestore returns the host:port of a ready Firestore emulator, starting
// one if none is configured, and sets FIRESTORE_EMULATOR_HOST for the test.
func Firestore(t testing.TB) string { return host(t, emulator.Firestore) }

// PubSub returns the host:port of a ready Pub/Sub emulator, starting one if
// none is configured, and sets PUBSUB_EMULATOR_HOST for the test.
func PubSub(t testing.TB) string { return host(t, emulator.PubSub) }

func host(t testing.TB, kind emulator.Kind) string {
	t.Helper()
	h, err := ensure(kind)
	if err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) && os.Getenv("CI") != "true" {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("the %s emulator is needed and could not be had: %v", kind, err)
	}
	// t.Setenv would forbid t.Parallel; the value is the same for every
	// test of the binary, so setting it process-wide is harmless.
	os.Setenv(kind.EnvVar(), h)
	return h
}

// ensure returns the configured host for kind or starts an emulator once.
func ensure(kind emulator.Kind) (string, error) {
	if h := os.Getenv(kind.EnvVar()); h != "" {
		return h, nil
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range started {
		if p.Kind == kind {
			return p.Host, nil
		}
	}
	if err, ok := startErrs[kind]; ok {
		return "", err
	}
	p, err := emulator.Start(context.Background(), kind, emulator.Options{})
	if err != nil {
		startErrs[kind] = err
		return "", err
	}
	started = append(started, p)
	return p.Host, nil
}

var unsafe = regexp.MustCompile(`[^a-z0-9]+`)

// ProjectID returns a project id that no other test uses: "demo-" (the
// emulators' convention for a project that exists nowhere), a slug of the
// test's name and a random suffix, within the 30 characters a project id may
// have.
func ProjectID(t testing.TB) string {
	slug := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(slug) > 16 {
		slug = strings.TrimRight(slug[:16], "-")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("demo-%s-%s", slug, hex.EncodeToString(b))
}
