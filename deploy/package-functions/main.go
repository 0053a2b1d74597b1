// Command package-functions writes the source archive that Cloud Run
// functions builds the three functions from.
//
// The Go buildpack builds the package at the root of the uploaded source,
// so the archive is the module reshaped: go.mod and go.sum at the root, the
// files of functions/ moved there (the root package is the functions
// package, which imports the framework's functions package), and the
// non-test files of exactly the internal packages it depends on (go list
// -deps), with the files they embed. Nothing of emulators/, deploy/ or any test goes in.
//
// The archive is reproducible: entries sorted, a fixed time, fixed modes,
// so the same tree always gives the same bytes (and Terraform redeploys
// only when the code changed).
//
//	go run ./deploy/package-functions [-o dist/functions-source.zip]
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const functionsPkg = "./functions"

func main() {
	out := flag.String("o", "dist/functions-source.zip", "archive to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "package-functions:", err)
		os.Exit(1)
	}
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	// EmbedFiles are the files a //go:embed of the package names (the
	// bootstrap's script template): without them it does not build.
	EmbedFiles []string
	Module     *struct{ Path, Dir string }
	Standard   bool
}

func run(out string) error {
	files, err := sources()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(files[name])
		if err != nil {
			return err
		}
		if _, err := w.Write(src); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "package-functions: wrote %s (%d files, %d bytes)\n", out, len(names), buf.Len())
	return nil
}

// sources maps each archive entry to the file it holds.
func sources() (map[string]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", functionsPkg)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	files := map[string]string{}
	var root string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Standard || p.Module == nil || p.Module.Dir == "" {
			continue
		}
		modRoot := p.Module.Dir
		if rel, err := filepath.Rel(modRoot, p.Dir); err == nil && !strings.HasPrefix(rel, "..") && isMainModule(p) {
			root = modRoot
			dest := filepath.ToSlash(rel)
			if p.Dir == filepath.Join(modRoot, "functions") {
				dest = "" // the functions package becomes the root package
			} else if !strings.HasPrefix(dest, "internal/") {
				return nil, fmt.Errorf("functions depends on %s, outside internal/: it would not be packaged", p.ImportPath)
			}
			for _, f := range append(p.GoFiles, p.EmbedFiles...) {
				files[strings.TrimPrefix(dest+"/"+f, "/")] = filepath.Join(p.Dir, f)
			}
		}
	}
	if root == "" {
		return nil, fmt.Errorf("go list found no package of this module under %s", functionsPkg)
	}
	files["go.mod"] = filepath.Join(root, "go.mod")
	files["go.sum"] = filepath.Join(root, "go.sum")
	return files, nil
}

// isMainModule reports whether a package is this module's own.
func isMainModule(p pkg) bool {
	return p.Module != nil && p.Module.Path == "github.com/egress-proxies/egress"
}
