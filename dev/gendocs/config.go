package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// variables is the configuration reference: one row per variable of the
// house and of each cloud (the production ones and the local stack's
// mock), in the order they are loaded.
func variables(string) (string, error) {
	var b strings.Builder
	b.WriteString("| variable | production default | `make run` default | read by | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range app.VarsOf(append(slices.Clone(clouds.All), mock.Plugin)) {
		prod := defaultCell(v.DocDefault())
		switch {
		case v.Required:
			prod = "required"
		case v.Local:
			prod = "not read in production"
		}
		local := defaultCell(v.DocDefault())
		if v.LocalDefault != "" {
			local = defaultCell(v.LocalDefault)
		} else if v.Required {
			local = "required"
		}
		var readers []string
		for _, f := range v.Readers {
			if f == app.LocalStack {
				readers = append(readers, "`make run`")
				continue
			}
			readers = append(readers, string(f))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, prod, local, strings.Join(readers, ", "), cell(v.Meaning))
	}
	return b.String(), nil
}

// defaultCell is a default as the table shows it: code, unless it is
// prose or none.
func defaultCell(d string) string {
	if d == "—" || strings.ContainsAny(d, " `") {
		return cell(d)
	}
	return "`" + cell(d) + "`"
}
