package engine

import (
	"testing"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

func TestPasswordHash(t *testing.T) {
	hash, err := vmconfig.NewPasswordHash("s3cretPasswordOf24Chars0")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		hash, password string
		want           bool
	}{
		"the password":         {hash, "s3cretPasswordOf24Chars0", true},
		"another password":     {hash, "s3cretPasswordOf24Chars1", false},
		"empty password":       {hash, "", false},
		"unknown scheme":       {"md5" + hash[len("sha256"):], "s3cretPasswordOf24Chars0", false},
		"no digest":            {"sha256:AAAA", "s3cretPasswordOf24Chars0", false},
		"salt not base64":      {"sha256:!!:AAAA", "s3cretPasswordOf24Chars0", false},
		"the password as hash": {"s3cretPasswordOf24Chars0", "s3cretPasswordOf24Chars0", false},
	}
	for name, tc := range cases {
		if got := vmconfig.Matches(tc.hash, tc.password); got != tc.want {
			t.Errorf("%s: vmconfig.Matches(%q, %q) = %v, want %v", name, tc.hash, tc.password, got, tc.want)
		}
	}
	other, err := vmconfig.NewPasswordHash("s3cretPasswordOf24Chars0")
	if err != nil {
		t.Fatal(err)
	}
	if other == hash {
		t.Errorf("two hashes of one password are equal (%q): the salt is not random", hash)
	}
}
