package main

import (
	"io"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/console"
	"github.com/egress-proxies/egress/internal/httpapi"
)

// TestConsoleActionsAreCommands: each action of the web console is a
// command of this CLI of the same name, and a call of the API behind the
// same permission: a person who learnt one finds it in the other.
func TestConsoleActionsAreCommands(t *testing.T) {
	root := (&cli{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}).command()
	perms := map[string]bool{}
	for _, rt := range httpapi.Routes() {
		perms[string(rt.Permission)] = true
	}
	for _, a := range console.Actions {
		cmd, rest, err := root.Find(strings.Fields(a.Command))
		if err != nil || len(rest) > 0 || cmd.CommandPath() != "egress "+a.Command {
			t.Errorf("the console's action %q is no command of the CLI (found %q, args %v, %v)", a.Command, cmd.CommandPath(), rest, err)
		}
		// A quota's change is a PATCH of the namespace that the API holds
		// to one more permission (UpdateQuota) inside the call.
		if !perms[string(a.Permission)] && a.Permission != "namespaces.updateQuota" {
			t.Errorf("the console's action %q needs %s, which no route of the API checks", a.Command, a.Permission)
		}
	}
}
