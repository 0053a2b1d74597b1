package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// compatibility is what a deployment needs and runs on, read where each
// is decided: Terraform's versions.tf and variables.tf, go.mod, the
// providers' images and the image test's releases.
func compatibility(root string) (string, error) {
	read := func(p string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, p))
		return string(b), err
	}
	versions, err := read("deploy/terraform/versions.tf")
	if err != nil {
		return "", err
	}
	variables, err := read("deploy/terraform/variables.tf")
	if err != nil {
		return "", err
	}
	gomod, err := read("go.mod")
	if err != nil {
		return "", err
	}
	find := func(text, from, pattern string) (string, error) {
		m := regexp.MustCompile(pattern).FindStringSubmatch(text)
		if m == nil {
			return "", fmt.Errorf("%s: nothing matches %s", from, pattern)
		}
		return m[1], nil
	}
	terraform, err := find(versions, "versions.tf", `required_version\s*=\s*"([^"]+)"`)
	if err != nil {
		return "", err
	}
	google, err := find(versions, "versions.tf", `(?s)google\s*=\s*\{[^}]*version\s*=\s*"([^"]+)"`)
	if err != nil {
		return "", err
	}
	runtime, err := find(variables, "variables.tf", `(?s)variable "go_runtime" \{[^}]*default\s*=\s*"([^"]+)"`)
	if err != nil {
		return "", err
	}
	goVersion, err := find(gomod, "go.mod", `(?m)^go (\S+)$`)
	if err != nil {
		return "", err
	}
	var releases []string
	for _, r := range imagetest.Releases {
		releases = append(releases, fmt.Sprintf("`%s` (%s)", r.Family, r.Suite))
	}
	var b strings.Builder
	b.WriteString("| what | version | where it is decided |\n| --- | --- | --- |\n")
	row := func(what, version, where string) { fmt.Fprintf(&b, "| %s | %s | %s |\n", what, cell(version), where) }
	row("Terraform (or OpenTofu)", "`"+terraform+"`", "`deploy/terraform/versions.tf`")
	row("Terraform's provider `hashicorp/google`", "`"+google+"`", "`deploy/terraform/versions.tf`")
	row("the functions' runtime (Cloud Run functions)", "`"+runtime+"`", "`deploy/terraform/variables.tf` (`go_runtime`)")
	row("Go, to build the functions, the CLI and the engine", "`"+goVersion+"`", "`go.mod`")
	row("Debian on the VMs, booted by `make image-test`", strings.Join(releases, ", "), "`imagetest.Releases`")
	row("the gcp provider's images", codeList(gcp.DefaultAllowedImages)+"; default "+code(gcp.DefaultImage), "`GCP_ALLOWED_IMAGES`")
	row("the hetzner provider's images", codeList(hetzner.DefaultAllowedImages)+"; default "+code(hetzner.DefaultImage), "`HETZNER_ALLOWED_IMAGES`")
	row("the aws provider's images", codeList(awsprovider.DefaultAllowedImages)+"; default "+code(awsprovider.DefaultImage), "`AWS_ALLOWED_IMAGES`")
	b.WriteString("\nThe clouds' APIs, as the SDKs in `go.mod` call them:\n\n| API | client (go.mod) |\n| --- | --- |\n")
	for _, m := range []struct{ api, module string }{
		{"Compute Engine API v1", "cloud.google.com/go/compute"},
		{"Cloud Firestore API v1", "cloud.google.com/go/firestore"},
		{"Pub/Sub API v1", "cloud.google.com/go/pubsub/v2"},
		{"Secret Manager API v1", "cloud.google.com/go/secretmanager"},
		{"Cloud KMS API v1 (through Tink)", "github.com/tink-crypto/tink-go-gcpkms/v2"},
		{"Cloud Logging API v2 (google.golang.org/api/logging/v2)", "google.golang.org/api"},
		{"Hetzner Cloud API v1", "github.com/hetznercloud/hcloud-go/v2"},
		{"Amazon EC2 API 2016-11-15 and STS", "github.com/aws/aws-sdk-go-v2/service/ec2"},
	} {
		v, err := find(gomod, "go.mod", `(?m)^\s*`+regexp.QuoteMeta(m.module)+` (v\S+)`)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | `%s %s` |\n", m.api, m.module, v)
	}
	return b.String(), nil
}

// codeList is each of list as code, comma-separated.
func codeList(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = code(s)
	}
	return strings.Join(parts, ", ")
}
