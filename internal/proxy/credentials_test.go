package proxy_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestNewCredentials: letters and digits only, the promised lengths, never
// the same twice, and a URL that parses back to them.
func TestNewCredentials(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		c, err := proxy.NewCredentials()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if len(c.Password) < 22 {
			t.Fatalf("password of %d characters: fewer than the 22 that carry 128 bits", len(c.Password))
		}
		if seen[c.Password] {
			t.Fatal("the same password twice")
		}
		seen[c.Password] = true
		u, err := url.Parse(c.URL("192.0.2.1:3128"))
		if err != nil {
			t.Fatal(err)
		}
		if pass, _ := u.User.Password(); u.User.Username() != c.Username || pass != c.Password || u.Host != "192.0.2.1:3128" {
			t.Fatalf("URL %s does not parse back to the credentials and endpoint", c.URL("192.0.2.1:3128"))
		}
	}
}

func TestCredentialsNeverPrintThePassword(t *testing.T) {
	c := proxy.Credentials{Username: "user", Password: "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"}
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v", c, c)} {
		if strings.Contains(s, c.Password) {
			t.Errorf("%q shows the password", s)
		}
	}
	if got := (proxy.Credentials{}).URL("192.0.2.1:3128"); got != "" {
		t.Errorf("URL without credentials = %q, want empty", got)
	}
	if got := c.URL(""); got != "" {
		t.Errorf("URL without an endpoint = %q, want empty", got)
	}
}
