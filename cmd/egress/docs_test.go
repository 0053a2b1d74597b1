package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestDocsUseTheCLIAsItIs: every egress command line in the README and
// docs/ names a command that exists with flags it takes, none of them a
// deprecated spelling, so a reader who copies one runs what the CLI
// does today.
func TestDocsUseTheCLIAsItIs(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	// The CLI reference is the command tree's own (egress docs), usage
	// lines and placeholders included.
	pages = slices.DeleteFunc(pages, func(p string) bool { return strings.HasSuffix(p, filepath.Join("reference", "cli.md")) })
	line := regexp.MustCompile(`^\s*(?:\$ |# )?egress ((?:proxies|proxy|namespaces|ns|pools|pool) .*)$`)
	checked := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for i, l := range strings.Split(string(raw), "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			checked++
			if err := parses(m[1]); err != nil {
				t.Errorf("%s:%d: %s\n  %v", rel, i+1, strings.TrimSpace(l), err)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d command lines in the docs: the pattern misses them", checked)
	}
}

// parses parses a command line the docs show (up to a comment, a pipe or
// a redirection) with the CLI's command tree.
func parses(cmdline string) error {
	var args []string
	for _, f := range strings.Fields(cmdline) {
		if f == "#" || f == "|" || strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>") {
			break
		}
		args = append(args, f)
	}
	c := &cli{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	root := c.command()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd.HasAvailableSubCommands() {
		return fmt.Errorf("%s is a group, not a command", cmd.CommandPath())
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	var deprecated []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Hidden {
			deprecated = append(deprecated, "--"+f.Name)
		}
	})
	if len(deprecated) > 0 {
		return fmt.Errorf("uses %s, a deprecated spelling", strings.Join(deprecated, ", "))
	}
	return nil
}
