package main

import (
	"bytes"
	"fmt"
	"os/exec"
)

// cliReference is what `egress docs` prints: the CLI's commands and flags,
// from its command tree.
func cliReference(root string) (string, error) {
	cmd := exec.Command("go", "run", "./cmd/egress", "docs")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go run ./cmd/egress docs: %v: %s", err, stderr.Bytes())
	}
	return string(out), nil
}
