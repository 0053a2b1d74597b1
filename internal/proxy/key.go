package proxy

import (
	"fmt"
	"strings"
)

// DocumentPattern is the path pattern of proxy documents, as Eventarc's
// Firestore trigger (deploy/terraform) and the local stand-in match it.
const DocumentPattern = "namespaces/{namespace}/proxies/{proxy}"

// Key names a proxy document.
type Key struct {
	Namespace string
	Name      string
}

// Path is the document's path relative to the database root, which is also
// its resource name in the API: namespaces/{ns}/proxies/{name}.
func (k Key) Path() string { return "namespaces/" + k.Namespace + "/proxies/" + k.Name }

func (k Key) String() string { return k.Path() }

// ParseKey parses a document path. It accepts the bare path
// (namespaces/a/proxies/b), Eventarc's subject (documents/namespaces/a/…)
// and a full name (projects/P/databases/D/documents/namespaces/a/…), and
// refuses anything else, including deeper paths and invalid labels.
func ParseKey(path string) (Key, error) {
	rest := path
	if i := strings.Index(rest, "/documents/"); i >= 0 && strings.HasPrefix(rest, "projects/") {
		rest = rest[i+len("/documents/"):]
	}
	rest = strings.TrimPrefix(rest, "documents/")
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] != "namespaces" || parts[2] != "proxies" {
		return Key{}, fmt.Errorf("document path %q is not of the form namespaces/{namespace}/proxies/{name}", path)
	}
	k := Key{Namespace: parts[1], Name: parts[3]}
	if !IsLabel(k.Namespace) || !IsLabel(k.Name) {
		return Key{}, fmt.Errorf("document path %q: namespace and name must be RFC 1123 labels", path)
	}
	return k, nil
}

// IsLabel reports whether s is an RFC 1123 label: 1–63 lowercase letters,
// digits and '-', starting and ending with a letter or digit.
func IsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}
