package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docsCommand prints the CLI's reference in Markdown: every command, its
// usage, examples and flags, as the command tree defines them. It is
// hidden (users read --help); `make docs` writes its output into
// docs/reference/cli.md, and a test there holds the page to it. The tree it
// walks is built without the environment, so that EGRESS_API and the like
// do not show as defaults.
func (c *cli) docsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Print the CLI's reference in Markdown (for make docs)",
		Hidden: true,
		Args:   names(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			plain := &cli{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
			return writeReference(c.stdout, plain.command())
		},
	}
	markOffline(cmd)
	return cmd
}

// writeReference writes root's flags, then each visible command below it,
// depth first in the order cobra lists them (by name).
func writeReference(w io.Writer, root *cobra.Command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Every command takes the global flags:\n\n")
	flagTable(&b, root.PersistentFlags())
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			command(&b, sub)
			walk(sub)
		}
	}
	walk(root)
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// command writes one command's section.
func command(b *strings.Builder, cmd *cobra.Command) {
	fmt.Fprintf(b, "\n### %s\n\n%s.\n", cmd.CommandPath(), strings.TrimSuffix(cmd.Short, "."))
	// Cobra's own completion commands say at length how to load what they
	// print, in their --help; the page keeps to what they are.
	cobras := strings.HasPrefix(cmd.CommandPath(), cmd.Root().Name()+" completion")
	if cmd.Long != "" && cmd.Long != cmd.Short && !cobras {
		fmt.Fprintf(b, "\n%s\n", strings.TrimSpace(cmd.Long))
	}
	if cmd.Runnable() && !cmd.HasAvailableSubCommands() {
		fmt.Fprintf(b, "\n```\n%s\n```\n", cmd.UseLine())
	}
	if len(cmd.Aliases) > 0 {
		fmt.Fprintf(b, "\nAlso: `%s`.\n", strings.Join(cmd.Aliases, "`, `"))
	}
	if cmd.Example != "" {
		fmt.Fprintf(b, "\n```sh\n%s\n```\n", strings.TrimRight(dedent(cmd.Example), "\n"))
	}
	if cmd.HasAvailableSubCommands() {
		// A group: its flags are listed with each of its commands.
		return
	}
	// The command's own flags and those its group gives it (-n), not the
	// global ones, which the page gives once.
	flags := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	flags.AddFlagSet(cmd.LocalNonPersistentFlags())
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if cmd.Root().PersistentFlags().Lookup(f.Name) == nil {
			flags.AddFlag(f)
		}
	})
	if flags.HasAvailableFlags() {
		b.WriteString("\n")
		flagTable(b, flags)
	}
}

// flagTable writes the visible flags of fs, sorted by name, as a table.
func flagTable(b *strings.Builder, fs *pflag.FlagSet) {
	b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "`--" + f.Name
		if t := flagType(f); t != "" {
			name += " " + t
		}
		name += "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := "—"
		if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "false" {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(f.Usage, "|", `\|`))
	})
}

// flagType is how a flag's value is written on the command line: none
// for a switch.
func flagType(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		return ""
	case "stringSlice", "stringArray":
		return "strings"
	case "int32Slice":
		return "ints"
	case "int32":
		return "int"
	}
	return f.Value.Type()
}

// dedent removes the two spaces cobra's examples are indented with.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
