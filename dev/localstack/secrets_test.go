package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// noCredentialInClear: what a reader of the database sees (a project
// Viewer holds datastore.entities.get and list) holds no proxy password
// in any form: the raw documents, read through the Firestore emulator's
// REST API as any client of Firestore would read them, not through this
// project's code, have the password only sealed
// (reconciler.credentials.sealedPassword), and the keyset that seals it
// only wrapped.
func (s *liveStack) noCredentialInClear(t *testing.T, ready resource) {
	u, err := url.Parse(ready.Status.ProxyURL)
	if err != nil {
		t.Fatal(err)
	}
	password, ok := u.User.Password()
	if !ok || password == "" {
		t.Fatalf("proxyURL %q has no password to look for", ready.Status.ProxyURL)
	}
	forms := map[string]string{
		"as it is":     password,
		"in base64":    base64.StdEncoding.EncodeToString([]byte(password)),
		"in base64url": base64.URLEncoding.EncodeToString([]byte(password)),
	}
	for _, path := range []string{
		fmt.Sprintf("namespaces/%s/proxies/%s", ready.Namespace, ready.Name),
		fmt.Sprintf("namespaces/%s/proxies", ready.Namespace),
		"keysets",
	} {
		raw := s.rawDocuments(t, path)
		for form, v := range forms {
			if strings.Contains(raw, strings.TrimRight(v, "=")) {
				t.Errorf("the raw %s holds the password %s:\n%s", path, form, raw)
			}
		}
		if strings.Contains(raw, `"password"`) {
			t.Errorf("the raw %s has a field \"password\":\n%s", path, raw)
		}
	}
	if raw := s.rawDocuments(t, fmt.Sprintf("namespaces/%s/proxies/%s", ready.Namespace, ready.Name)); !strings.Contains(raw, `"sealedPassword"`) {
		t.Errorf("the raw document has no sealedPassword: where did the password go?\n%s", raw)
	}
}

// rawDocuments is the emulator's REST answer for a document or a
// collection, as text.
func (s *liveStack) rawDocuments(t *testing.T, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/%s", s.firestore, s.project, path), nil)
	req.Header.Set("Authorization", "Bearer owner")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s from the emulator: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}
