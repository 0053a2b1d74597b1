package main

import (
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/version/versiontest"
)

// TestMain runs the command's main with the arguments in
// EGRESS_PROXY_MAIN_ARGS when the test binary is started so, so a test
// can run the command's flags as a VM's shell does, exit code and all.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("EGRESS_PROXY_MAIN_ARGS"); ok {
		os.Args = append([]string{"egress-proxy"}, args)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestVersionFlag: `egress-proxy -version` says CHANGELOG.md's newest
// release and exits 0 without a configuration, so an operator can ask a
// VM's binary which release it is (running VMs keep the binary they
// booted with).
func TestVersionFlag(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EGRESS_PROXY_MAIN_ARGS=-version")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("egress-proxy -version: %v", err)
	}
	if diff := cmp.Diff("egress-proxy "+versiontest.Changelog(t)+"\n", string(out)); diff != "" {
		t.Errorf("egress-proxy -version (-CHANGELOG.md's newest +what it printed):\n%s", diff)
	}
}
