package proxy

import (
	"fmt"
	"strings"
)

// DocumentPattern is the path pattern of proxy documents, as Eventarc's
// Firestore trigger (deploy/terraform) and the local stand-in match it.
const DocumentPattern = "namespaces/{namespace}/proxies/{proxy}"

// MemberPattern is the path pattern of a warm pool's member documents:
// proxy documents of no namespace, each claiming one warm VM of the pool.
const MemberPattern = "pools/{pool}/proxies/{proxy}"

// Key names a proxy document: a namespace's proxy, or, with Pool set and
// Namespace empty, a member of a warm pool (pools/{pool}/proxies/{name}).
type Key struct {
	Namespace string
	Name      string
	// Pool, set only for a pool's member, is the pool's name.
	Pool string
}

// Path is the document's path relative to the database root, which is also
// its resource name in the API: namespaces/{ns}/proxies/{name}, or
// pools/{pool}/proxies/{name} for a pool's member.
func (k Key) Path() string {
	if k.Pool != "" {
		return "pools/" + k.Pool + "/proxies/" + k.Name
	}
	return "namespaces/" + k.Namespace + "/proxies/" + k.Name
}

// IsMember reports whether the key names a warm pool's member.
func (k Key) IsMember() bool { return k.Pool != "" }

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
	if len(parts) == 4 && parts[0] == "pools" && parts[2] == "proxies" {
		k := Key{Pool: parts[1], Name: parts[3]}
		if !IsLabel(k.Pool) || !IsLabel(k.Name) {
			return Key{}, fmt.Errorf("document path %q: pool and name must be RFC 1123 labels", path)
		}
		return k, nil
	}
	if len(parts) != 4 || parts[0] != "namespaces" || parts[2] != "proxies" {
		return Key{}, fmt.Errorf("document path %q is not of the form namespaces/{namespace}/proxies/{name} or pools/{pool}/proxies/{name}", path)
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
