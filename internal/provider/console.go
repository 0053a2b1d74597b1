package provider

import (
	"context"
	"errors"
	"strings"
)

// ConsoleReader is an optional part of a Provider, added to the original
// contract: a provider that can read a VM's console implements it, and the
// reconciler puts the last lines into status.consoleTail of a proxy whose VMs
// never became ready, where a person looks first. A provider without a
// console simply does not implement it.
type ConsoleReader interface {
	// Console returns the most recent output of the VM's console (for a
	// cloud VM, its serial port), at most a few kilobytes. It does not
	// change the VM.
	Console(ctx context.Context, providerID string) (string, error)
}

// ErrNoConsole is what ReadConsole returns for a provider that has none.
var ErrNoConsole = errors.New("the provider cannot read a VM's console")

// ReadConsole reads the console of a VM through p, looking beneath p's
// decorators (Unwrap) for a ConsoleReader.
func ReadConsole(ctx context.Context, p Provider, providerID string) (string, error) {
	for {
		if c, ok := p.(ConsoleReader); ok {
			return c.Console(ctx, providerID)
		}
		d, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return "", ErrNoConsole
		}
		p = d.Unwrap()
	}
}

// LastLines returns at most n of the last non-empty lines of s.
func LastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	out := make([]string, 0, n)
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimRight(lines[i], "\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
