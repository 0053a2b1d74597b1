package deploy_test

import (
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// beforeTerraform are the APIs Terraform needs before it can enable the
// others: Service Usage to enable them, Resource Manager for the project's
// data source, Cloud Storage for the source bucket (on in a new project,
// but not in every one).
var beforeTerraform = []string{
	"cloudresourcemanager.googleapis.com",
	"serviceusage.googleapis.com",
	"storage.googleapis.com",
}

// TestRunbookEnablesTheAPIs: the first deploy's runbook
// (docs/getting-started/first-deploy.md) enables, before the first
// apply, exactly the APIs main.tf enables and the ones Terraform needs to
// begin with, so an API added to the module is added to the runbook too.
func TestRunbookEnablesTheAPIs(t *testing.T) {
	ev := evaluate(t, parseModule(t), nil)
	want := append(stringList(t, "local.services", ev.local(t, "services")), beforeTerraform...)
	sort.Strings(want)

	page, err := os.ReadFile("../docs/getting-started/first-deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(page), "\n")
	api := regexp.MustCompile(`[a-z0-9]+\.googleapis\.com`)
	var got []string
	for i, l := range lines {
		if !strings.HasPrefix(l, "gcloud services enable") {
			continue
		}
		for ; i < len(lines); i++ {
			got = append(got, api.FindAllString(lines[i], -1)...)
			if !strings.HasSuffix(lines[i], `\`) {
				break
			}
		}
		break
	}
	if got == nil {
		t.Fatal("docs/getting-started/first-deploy.md has no `gcloud services enable` line")
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("APIs the runbook enables (-main.tf's and the ones Terraform needs first +the runbook's):\n%s", diff)
	}
}

// TestRunbookStepsAreNumberedInOrder: the first deploy's steps are
// numbered 1, 2, 3, … with none skipped, so a reader who follows them in
// order misses none.
func TestRunbookStepsAreNumberedInOrder(t *testing.T) {
	page, err := os.ReadFile("../docs/getting-started/first-deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for i, m := range regexp.MustCompile(`(?m)^\*\*(\d+)\. `).FindAllStringSubmatch(string(page), -1) {
		got = append(got, m[1])
		want = append(want, strconv.Itoa(i+1))
	}
	if len(got) < 5 {
		t.Fatalf("docs/getting-started/first-deploy.md has %d numbered steps (**N. …), want at least 5", len(got))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the first deploy's step numbers (-in order +the page):\n%s", diff)
	}
}
