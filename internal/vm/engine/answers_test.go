package engine

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the table of answers in docs/concepts/vm.md from the code")

// answersTable is the table of answers of docs/concepts/vm.md, row by
// row, from answers().
func answersTable() string {
	var b strings.Builder
	b.WriteString("| status | `X-Egress-Error` | body text | SOCKS5 reply |\n| --- | --- | --- | --- |\n")
	for _, a := range answers() {
		fmt.Fprintf(&b, "| %d | `%s` | %s | `%02X` |\n", a.Status, a.Code, a.Text, a.Socks)
	}
	return b.String()
}

// TestAnswersDocumented: the docs' table of answers is the code's
// (go test -run TestAnswersDocumented -update-docs rewrites it), and no
// two answers share a code.
func TestAnswersDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range answers() {
		if seen[a.Code] {
			t.Errorf("two answers have the code %s", a.Code)
		}
		seen[a.Code] = true
	}
	const path = "../../../docs/concepts/vm.md"
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- answers:start (engine.TestAnswersDocumented holds this table to the code) -->\n", "<!-- answers:end -->"
	text := string(readme)
	i, j := strings.Index(text, start), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no table of answers between %q and %q", path, start, end)
	}
	if got, want := text[i+len(start):j], answersTable(); got != want {
		if *updateDocs {
			if err := os.WriteFile(path, []byte(text[:i+len(start)]+want+text[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the table of answers in %s is not the code's; go test ./internal/vm/engine -run TestAnswersDocumented -update-docs rewrites it. Want:\n%s", path, want)
	}
}
