package hetznerimage

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// Metadata stands in for Hetzner's metadata service on
// 169.254.169.254, as cloud-init's Hetzner datasource reads it: GET
// /hetzner/v1/metadata (a YAML document: the server's id as instance-id,
// its name as hostname, its network and keys), /hetzner/v1/metadata/KEY
// (one value of it: the datasource asks instance-id first, to see the
// service answers) and /hetzner/v1/userdata (the user-data the API was
// given, as it was given). It serves nothing else, and takes no header:
// Hetzner's service serves any process of the server. Every request is
// recorded, before anything is answered.
type Metadata struct {
	// ID is the server's id, Hostname its name, UserData its user-data.
	ID       string
	Hostname string
	UserData string

	imagetest.Recorder
}

func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.RecordGet(w, r) {
		return
	}
	switch r.URL.Path {
	case "/hetzner/v1/metadata":
		io.WriteString(w, m.document())
	case "/hetzner/v1/metadata/instance-id":
		io.WriteString(w, m.ID)
	case "/hetzner/v1/metadata/hostname":
		io.WriteString(w, m.Hostname)
	case "/hetzner/v1/userdata":
		io.WriteString(w, m.UserData)
	default:
		http.NotFound(w, r)
	}
}

// document is the metadata as Hetzner's service writes it: YAML, the
// network as cloud-init's version 1 configuration (DHCP on eth0, which
// the image test's container has set already from outside).
func (m *Metadata) document() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hostname: %s\ninstance-id: %s\n", m.Hostname, m.ID)
	fmt.Fprintf(&b, "local-ipv4: ''\npublic-ipv4: %s\n", imagetest.VMPrefix.Addr())
	b.WriteString("network-config:\n  config:\n  - name: eth0\n    subnets:\n    - ipv4: true\n      type: dhcp\n    type: physical\n  version: 1\n")
	b.WriteString("public-keys: []\n")
	return b.String()
}
