package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// A table of the docs with a row per cloud takes each cloud's row from the
// cloud's folder, internal/provider/TYPE/rows.md, a comment a row:
//
//	<!-- row NAME: | the cloud | … | -->
//
// written as it reads on the table's page (its links relative to it), and
// make docs writes the rows into the table, in clouds.All's order,
// between the section's markers: a new cloud writes its rows in its
// folder and no table under docs/.

// cloudRowsSource is where a cloud's rows are written.
func cloudRowsSource(typ string) string { return "internal/provider/" + typ + "/rows.md" }

// rowPrefix begins a row's comment; the table's name and ":" follow.
const rowPrefix = "<!-- row "

// cloudTable is a table of the docs with a row per cloud.
type cloudTable struct {
	section
	// head is the table's head (its two first lines); tail its rows
	// after the clouds', from the plugins linked beside them.
	head string
	tail func() string
}

// cloudTables are the docs' tables with a row per cloud.
var cloudTables = []cloudTable{
	{
		section: section{page: "docs/concepts/providers.md", name: "ipv6-prefixes", from: "the row ipv6-prefixes of each cloud's concepts.md"},
		head:    "| cloud | what a VM gets | size | price (the cloud's own docs) | the product |\n| --- | --- | --- | --- | --- |",
	},
	{
		section: section{page: "docs/operations/cost.md", name: "price-sources", from: "the row price-sources of each cloud's operations.md, and the mock's prices"},
		head:    "| cloud | read from | the VM | the IPv4 address | egress |\n| --- | --- | --- | --- | --- |",
		tail:    mockPriceRow,
	},
	{
		section: section{page: "docs/operations/cost.md", name: "proxy-prices", from: "the row proxy-prices of each cloud's operations.md"},
		head:    "| cloud | default machine | price of one proxy, idle | source |\n| --- | --- | --- | --- |",
	},
}

// cloudTableFiles are the pages that hold the cloud tables, each written
// whole: its tables from the clouds of cl, the rest as it is.
func cloudTableFiles() []generatedFile {
	var out []generatedFile
	for _, t := range cloudTables {
		if len(out) > 0 && out[len(out)-1].path == t.page {
			continue
		}
		page := t.page
		out = append(out, generatedFile{path: page, render: func(root string, cl []plugin.Plugin) ([]byte, error) {
			raw, err := os.ReadFile(filepath.Join(root, page))
			if err != nil {
				return nil, err
			}
			text := string(raw)
			for _, t := range cloudTables {
				if t.page != page {
					continue
				}
				table, err := t.render(root, cl)
				if err != nil {
					return nil, fmt.Errorf("table %s: %w", t.name, err)
				}
				if text, err = t.splice(text, table); err != nil {
					return nil, err
				}
			}
			return []byte(text), nil
		}})
	}
	return out
}

// render is the table: its head, a row for each cloud of cl whose folder
// holds its rows, and its tail. Rows without the table's are an error:
// every cloud has one.
func (t cloudTable) render(root string, cl []plugin.Plugin) (string, error) {
	rows := []string{t.head}
	// A row's columns are its |s but the escaped ones, less one.
	columns := func(row string) int { return strings.Count(row, "|") - strings.Count(row, `\|`) - 1 }
	head, _, _ := strings.Cut(t.head, "\n")
	folders, err := folderFiles(root, cl, cloudRowsSource)
	if err != nil {
		return "", err
	}
	for _, f := range folders {
		src := f.src
		row, ok := cloudRow(f.text, t.name)
		if !ok {
			return "", fmt.Errorf("%s has no comment %q…-->: the cloud's row of the table %s in %s", src, rowPrefix+t.name+":", t.name, t.page)
		}
		if !strings.HasPrefix(row, "|") || !strings.HasSuffix(row, "|") || columns(row) != columns(head) {
			return "", fmt.Errorf("%s: the row %s is not a row of the table's %d columns, between |: %q", src, t.name, columns(head), row)
		}
		rows = append(rows, row)
	}
	if t.tail != nil {
		rows = append(rows, t.tail())
	}
	return strings.Join(rows, "\n"), nil
}

// cloudRow is the row of the table name that page's comment gives, on one
// line.
func cloudRow(page, name string) (string, bool) {
	_, rest, ok := strings.Cut(page, rowPrefix+name+":")
	if !ok {
		return "", false
	}
	row, _, ok := strings.Cut(rest, "-->")
	return strings.Join(strings.Fields(row), " "), ok
}

// mockPriceRow is the mock's row of the price sources: its fixed list.
func mockPriceRow() string {
	return fmt.Sprintf("| the mock | a fixed list in its package | %s | %s | %s a GB beyond %d GB |",
		mock.PriceVMPerHour, mock.PriceIPv4PerHour, mock.PriceEgressPerGB, mock.PriceIncludedEgress/1_000_000_000)
}
