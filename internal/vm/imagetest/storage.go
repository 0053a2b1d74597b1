package imagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Storage stands in for the deployment's bucket as the VM reads it: one
// object, the proxy engine binary, at /BUCKET/OBJECT, served only to the
// bearer token the metadata stand-in hands out, as Cloud Storage serves a
// private object only to an account allowed to read it. It records every
// download, so that a test can see that a second boot downloads nothing.
type Storage struct {
	// Token is the bearer token the object is served to; empty, the
	// object is public (a Hetzner server reads it with no credential),
	// and a request that brings a token anyway is refused, so that the
	// test sees the server sends none.
	Token string
	// Path is the object's path, /BUCKET/OBJECT; Binary its content.
	Path   string
	Binary []byte

	mu        sync.Mutex
	downloads []Hit
}

// SHA256 is the object's SHA-256 in hex, what the metadata carries.
func (s *Storage) SHA256() string {
	sum := sha256.Sum256(s.Binary)
	return hex.EncodeToString(sum[:])
}

func (s *Storage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Token == "" && r.Header.Get("Authorization") != "" {
		http.Error(w, "this public object takes no credential", http.StatusBadRequest)
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, "Anonymous caller does not have storage.objects.get access", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != s.Path {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.downloads = append(s.downloads, Hit{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method, URI: r.RequestURI})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(s.Binary)
}

// Downloads returns the object's downloads so far.
func (s *Storage) Downloads() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Hit(nil), s.downloads...)
}

// BuildEngine builds the proxy engine from the tree, static (CGO_ENABLED=0)
// as `make package` builds what Terraform uploads, and returns its bytes.
func BuildEngine(moduleRoot, workDir string) ([]byte, error) {
	out := filepath.Join(workDir, "egress-proxy")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/egress-proxy")
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the proxy engine: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return os.ReadFile(out)
}
