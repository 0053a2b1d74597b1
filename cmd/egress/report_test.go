package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestReport holds each kind of failure to its exit code and to what a
// person reads on standard error.
func TestReport(t *testing.T) {
	for name, tc := range map[string]struct {
		err      error
		wantCode int
		wantText string
	}{
		"FieldViolations": {
			err: &client.Error{Code: 400, Status: "INVALID_ARGUMENT", Message: "spec.placement.region: is required; spec.allowedSourceRanges: is required",
				FieldViolations: []client.FieldViolation{
					{Field: "spec.placement.region", Description: "is required", Reason: "REGION_REQUIRED"},
					{Field: "spec.allowedSourceRanges", Description: "is required", Reason: "SOURCE_RANGES_REQUIRED"},
				}},
			wantCode: exitInvalid,
			wantText: "egress: the API refused the request (400 INVALID_ARGUMENT):\n" +
				"  spec.placement.region: is required\n" +
				"  spec.allowedSourceRanges: is required\n",
		},
		"Forbidden": {
			err:      fmt.Errorf("create: %w", &client.Error{Code: 403, Status: "PERMISSION_DENIED", Message: "you are not a member of namespace demo", Reason: "NAMESPACE_ACCESS_DENIED"}),
			wantCode: exitFailed,
			wantText: "egress: you are not a member of namespace demo (403 PERMISSION_DENIED, NAMESPACE_ACCESS_DENIED)\n",
		},
		"Conflict with a violation": {
			err: &client.Error{Code: 409, Status: "ALREADY_EXISTS", Message: "proxy namespaces/d/proxies/p exists with another spec",
				FieldViolations: []client.FieldViolation{{Field: "spec", Description: "differs from the spec of the existing proxy of this name"}}},
			wantCode: exitFailed,
			wantText: "egress: the API refused the request (409 ALREADY_EXISTS):\n  spec: differs from the spec of the existing proxy of this name\n",
		},
		"TooSoon": {
			err: &client.Error{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "proxy namespaces/d/proxies/p was rotated less than 10m0s ago (ROTATE_MIN_INTERVAL); retry in 9m0s",
				Reason: "ROTATED_RECENTLY", RetryDelay: 540 * time.Second},
			wantCode: exitFailed,
			wantText: "egress: proxy namespaces/d/proxies/p was rotated less than 10m0s ago (ROTATE_MIN_INTERVAL); retry in 9m0s (429 RESOURCE_EXHAUSTED, ROTATED_RECENTLY)\n" +
				"egress: the same request is taken in 9m0s\n",
		},
		"Usage": {
			err:      usageError{errors.New(`unknown flag: --regoin`)},
			wantCode: exitInvalid,
			wantText: "egress: unknown flag: --regoin\nRun 'egress --help' for usage.\n",
		},
		"Failed proxy": {
			err: &client.FailedError{Proxy: &proxy.Proxy{Namespace: "d", Name: "p",
				Status: proxy.Status{Phase: proxy.PhaseFailed, Message: "creating instance: image not found"}}},
			wantCode: exitFailed,
			wantText: "egress: proxy d/p is Failed: creating instance: image not found\n",
		},
		"Timeout": {
			err:      fmt.Errorf("waiting for proxy d/p (phase Provisioning): %w", context.DeadlineExceeded),
			wantCode: exitFailed,
			wantText: "egress: waiting for proxy d/p (phase Provisioning): context deadline exceeded\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if code := report(&out, tc.err); code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantText, out.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommandLineRefusedBeforeAnyCall: what cobra or the CLI refuses
// before it calls the API exits 2 and says why; nothing listens at the
// API's address, so a call would fail with exit 1 instead.
func TestCommandLineRefusedBeforeAnyCall(t *testing.T) {
	env := map[string]string{"EGRESS_API": "http://127.0.0.1:1"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"UnknownCommand":   {args: []string{"proxy", "launch"}, want: `unknown command "launch"`},
		"UnknownTopLevel":  {args: []string{"proxiez"}, want: `unknown command "proxiez"`},
		"UnknownFlag":      {args: []string{"proxies", "list", "-n", "d", "--regoin", "x"}, want: "unknown flag: --regoin"},
		"MissingFlags":     {args: []string{"proxies", "create", "p", "-n", "d"}, want: `required flag(s) "allowed-source-range", "region" not set`},
		"NoNamespace":      {args: []string{"proxies", "get", "p"}, want: "no namespace: pass --namespace NS or set EGRESS_NAMESPACE"},
		"ArgumentCount":    {args: []string{"proxies", "get", "-n", "d"}, want: "egress proxies get takes 1 argument(s), got 0"},
		"Output":           {args: []string{"proxies", "list", "-n", "d", "-o", "yaml"}, want: `--output "yaml": want table or json`},
		"WaitFor":          {args: []string{"proxies", "wait", "p", "-n", "d", "--for", "Gone"}, want: `--for "Gone": want Ready or Deleted`},
		"Member":           {args: []string{"namespaces", "create", "d", "--member", "alice@example.com"}, want: `--member "alice@example.com": want EMAIL=ROLE`},
		"Quota":            {args: []string{"namespaces", "set-quota", "d", "12x"}, want: `quota "12x": want a whole number`},
		"BadDuration":      {args: []string{"proxies", "wait", "p", "-n", "d", "--timeout", "soon"}, want: `invalid argument "soon" for "--timeout"`},
		"API URL":          {args: []string{"--api", "ftp://x", "proxies", "list", "-n", "d"}, want: `API URL "ftp://x": want http(s)://HOST[:PORT]`},
		"AddMemberNoRole":  {args: []string{"namespaces", "add-member", "d", "bob@example.com"}, want: `required flag(s) "role" not set`},
		"CreateWithoutArg": {args: []string{"proxies", "create", "--region", "r", "--allowed-source-range", "1.2.3.4/32", "-n", "d"}, want: "takes 1 argument(s), got 0"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr, func(k string) string { return env[k] })
			if code != exitInvalid {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitInvalid, stderr.String())
			}
			if !bytes.Contains(stderr.Bytes(), []byte(tc.want)) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
