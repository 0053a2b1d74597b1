package main

import (
	"fmt"

	"github.com/spf13/pflag"
)

// The CLI's flags are one vocabulary: one name per field, the API's field
// name where there is one (spec.allowedSourceRanges is
// --allowed-source-range on every command, spec.ipPolicy --ip-policy).
// A spelling a release used before is kept, for one release more, as a
// hidden alias: it works, help does not show it, and each use says on
// standard error what to write instead.

// deprecatedAlias makes old a hidden spelling of fs's flag name: its
// values go to name's flag, as if name had been given.
func (c *cli) deprecatedAlias(fs *pflag.FlagSet, old, name string) {
	fs.AddFlag(&pflag.Flag{
		Name:   old,
		Usage:  "deprecated: use --" + name,
		Value:  &forward{c: c, fs: fs, old: old, name: name, typ: fs.Lookup(name).Value.Type()},
		Hidden: true,
	})
}

// deprecatedSwitch makes old a hidden switch that sets fs's flag name to
// value (--static: --ip-policy Static).
func (c *cli) deprecatedSwitch(fs *pflag.FlagSet, old, name, value string) {
	fs.AddFlag(&pflag.Flag{
		Name:        old,
		Usage:       "deprecated: use --" + name + " " + value,
		Value:       &forward{c: c, fs: fs, old: old, name: name, fixed: value, typ: "bool"},
		NoOptDefVal: "true",
		Hidden:      true,
	})
}

// forward is an old spelling's value: it sets the flag of the new one.
type forward struct {
	c         *cli
	fs        *pflag.FlagSet
	old, name string
	// fixed, for a switch, is what the new flag is set to.
	fixed, typ string
	set        bool
}

func (f *forward) Set(v string) error {
	if !f.set {
		instead := "--" + f.name
		if f.fixed != "" {
			instead += " " + f.fixed
		}
		fmt.Fprintf(f.c.stderr, "egress: --%s is deprecated and goes in the next release; use %s\n", f.old, instead)
	}
	f.set = true
	if f.fixed != "" {
		if v != "true" {
			return nil
		}
		v = f.fixed
	}
	return f.fs.Set(f.name, v)
}

func (f *forward) String() string {
	if f.fixed != "" {
		return "false"
	}
	return ""
}

func (f *forward) Type() string { return f.typ }
