package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/plugin"
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
	apis := []plugin.API{
		{Name: "Cloud Firestore API v1", Module: "cloud.google.com/go/firestore"},
		{Name: "Pub/Sub API v1", Module: "cloud.google.com/go/pubsub/v2"},
		{Name: "Secret Manager API v1", Module: "cloud.google.com/go/secretmanager"},
		{Name: "Cloud KMS API v1 (through Tink)", Module: "github.com/tink-crypto/tink-go-gcpkms/v2"},
		{Name: "Cloud Logging API v2 (google.golang.org/api/logging/v2)", Module: "google.golang.org/api"},
	}
	// Each cloud's images and APIs are its plugin's.
	for _, p := range clouds.All {
		row("the "+p.Type+" provider's images", codeList(p.Images.Allowed)+"; default "+code(p.Images.Default), "`"+p.Images.Var+"`")
		apis = append(apis, p.APIs...)
	}
	b.WriteString("\nThe clouds' APIs, as the SDKs in `go.mod` call them:\n\n| API | client (go.mod) |\n| --- | --- |\n")
	for _, m := range apis {
		v, err := find(gomod, "go.mod", `(?m)^\s*`+regexp.QuoteMeta(m.Module)+` (v\S+)`)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | `%s %s` |\n", m.Name, m.Module, v)
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
