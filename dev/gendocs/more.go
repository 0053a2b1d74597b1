package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/deploy"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/sim"
)

// vmAccount is what the proxy VMs' account holds, and for what.
func vmAccount(string) (string, error) {
	var b strings.Builder
	b.WriteString("| role | on | for |\n| --- | --- | --- |\n")
	for _, g := range deploy.ProxyVM {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", g.Role, g.On, cell(g.By))
	}
	return b.String(), nil
}

// plantedBugs are the safety rules the simulation must catch switched
// off, how far it looks for each, and the line it ends with.
func plantedBugs(string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "With each of these %d rules switched off in turn, the simulation must find a violation within %d seeds (`sim.PlantedSeeds`; `TestPlantedBugsAreFound`, and `make sim` with as many seeds):\n\n", len(sim.PlantedBugs), sim.PlantedSeeds)
	for _, bug := range sim.PlantedBugs {
		fmt.Fprintf(&b, "- %s\n", bug)
	}
	// The line's shape, its figures named: the line of no seed at all,
	// each number in it replaced by a letter.
	letters := []string{"N", "M", "P", "V", "W", "X"}
	i := 0
	line := regexp.MustCompile(`\d+`).ReplaceAllStringFunc(sim.Result{}.Summary(), func(string) string {
		l := letters[min(i, len(letters)-1)]
		i++
		return l
	})
	fmt.Fprintf(&b, "\n`make sim` ends with one line:\n\n```\n%s\n```\n", line)
	return b.String(), nil
}

// audited are the actions of the calls that write an audit line.
func audited(string) (string, error) {
	var b strings.Builder
	b.WriteString("| call | action |\n| --- | --- |\n")
	for _, r := range httpapi.Routes() {
		if r.Audited {
			fmt.Fprintf(&b, "| `%s %s` | `%s` |\n", r.Method, r.Path, r.Permission)
		}
	}
	return b.String(), nil
}
