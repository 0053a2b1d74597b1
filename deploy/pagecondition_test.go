package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDeployPageQuotesTheSecretCondition: the deploy page quotes the
// reconciler's secret-access condition as iam.tf writes it, every clause
// of it, with the project number and the prefix as NUMBER and PREFIX. A
// clause added to the condition and not to the page would leave an
// operator auditing the binding against a rule that is not the one
// applied.
func TestDeployPageQuotesTheSecretCondition(t *testing.T) {
	tf, err := os.ReadFile("terraform/iam.tf")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)resource "google_project_iam_member" "reconcile_secrets" \{.*?expression\s*=\s*"((?:[^"\\]|\\.)*)"`).FindSubmatch(tf)
	if block == nil {
		t.Fatal(`terraform/iam.tf has no expression in resource "google_project_iam_member" "reconcile_secrets"`)
	}
	want := strings.NewReplacer(
		`\"`, `"`,
		"${data.google_project.this.number}", "NUMBER",
		"${var.cloud_init_secret_prefix}", "PREFIX",
	).Replace(string(block[1]))
	page, err := os.ReadFile("../docs/operations/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(page)), " "), "`"+want+"`") {
		t.Errorf("docs/operations/deploy.md does not quote the secret-access condition of terraform/iam.tf; want, in backquotes:\n%s", want)
	}
}
