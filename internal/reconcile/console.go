package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"unicode"

	"github.com/egress-proxies/egress/internal/provider"
)

// consoleLines is how much of a failed VM's console a Failed proxy's
// status.consoleTail keeps.
const consoleLines = 20

// minFragment is the shortest value of a cloud-init looked for in the
// console: a shorter one is a word like any other, and would take every
// line with it.
const minFragment = 6

// consoleTail reads the last lines of the current VM's console, without
// any line that carries the proxy's credentials or a value of the spec's
// cloud-init: redacted here, before it is stored, so no secret is ever
// stored twice. A cloud-init secret that cannot be read again keeps the
// whole console out.
func (run *run) consoleTail(ctx context.Context) []string {
	p := run.doc
	console, err := provider.ReadConsole(ctx, run.prov, p.Status.ProviderID)
	if err != nil {
		if !errors.Is(err, provider.ErrNoConsole) {
			run.log.WarnContext(ctx, "cannot read the console of the instance", slog.String("providerID", p.Status.ProviderID), slog.Any("error", err))
		}
		return nil
	}
	secrets := []string{p.Reconciler.Credentials.Username, p.Reconciler.Credentials.Password}
	if p.Spec.CloudInit != "" || p.Spec.CloudInitSecret != "" {
		content, _, _, err := run.bootstrap(ctx, run.doc.Generation)
		if err != nil {
			run.log.WarnContext(ctx, "cannot read the cloud-init again to redact the console; keeping none of it", slog.Any("error", err))
			return nil
		}
		secrets = append(secrets, SecretFragments(content)...)
	}
	all := provider.LastLines(console, strings.Count(console, "\n")+1)
	kept := slices.DeleteFunc(all, func(line string) bool {
		return slices.ContainsFunc(secrets, func(s string) bool { return s != "" && strings.Contains(line, s) })
	})
	if removed := len(all) - len(kept); removed > 0 {
		run.log.InfoContext(ctx, "console lines withheld: they carried a secret", slog.Int("lines", removed))
	}
	return kept[max(0, len(kept)-consoleLines):]
}

// SecretFragments are the values of a cloud-init that a console line must
// not carry: every word of at least minFragment characters, words split at
// spaces, quotes, brackets and the separators of YAML and of KEY=VALUE,
// apart from the YAML keys (write_files:, content:), which cloud-init's
// own lines name and which hold nothing secret. It over-redacts rather
// than under: a line that merely shares a long word with the cloud-init
// goes too.
func SecretFragments(content string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "- "))
		if key, value, ok := strings.Cut(line, ":"); ok && isYAMLKey(key) && (value == "" || value[0] == ' ') {
			line = value
		}
		for _, f := range strings.FieldsFunc(line, separates) {
			if len(f) >= minFragment && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func separates(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'`,;=[]{}()<>|&", r)
}

// isYAMLKey reports whether s is a plain YAML mapping key.
func isYAMLKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}
