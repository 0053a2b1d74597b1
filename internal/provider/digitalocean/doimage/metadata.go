package doimage

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"

	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// Metadata stands in for DigitalOcean's metadata service on
// 169.254.169.254, as cloud-init's DigitalOcean datasource reads it: GET
// /metadata/v1.json, the whole of a Droplet's metadata in one JSON
// document, shaped as DigitalOcean's metadata API reference documents it,
// with the fields the datasource reads, and those the proxy's agent
// reads of a Static proxy's Droplet (the reserved IP and the public
// interface's anchor), and no others (document). Beside
// it, the two data endpoints a process on a Droplet reads the user's and
// DigitalOcean's cloud-init parts at, /metadata/v1/user-data and
// /metadata/v1/vendor-data, which the image test's checks ask through the
// proxy. Any other path is 404, as DigitalOcean answers an endpoint that
// does not exist. It takes no header: DigitalOcean's service serves any
// process of the Droplet. Every request is recorded, before anything is
// answered.
type Metadata struct {
	// DropletID is the Droplet's id (a number in the API, and the
	// serial number of its SMBIOS), Hostname its name, Region its
	// region's slug.
	DropletID int64
	Hostname  string
	Region    string
	// UserData is the user-data the Droplet was created with, as it was
	// given; VendorData is DigitalOcean's own cloud-config.
	UserData, VendorData string
	// Public is the Droplet's public interface: its address with its
	// prefix, its gateway and its MAC address.
	Public  netip.Prefix
	Gateway netip.Addr
	MAC     string
	// Nameservers are the resolvers the Droplet is given.
	Nameservers []string
	// Anchor is the public interface's anchor address with its prefix,
	// AnchorGateway its gateway: every Droplet has them (served when
	// set).
	Anchor        netip.Prefix
	AnchorGateway netip.Addr
	// ReservedIP is the reserved IP assigned to the Droplet now, ""
	// for none (nil: never one), asked at each request: the provider
	// assigns it once the Droplet is active, after its boot began, and
	// the document says so from then on.
	ReservedIP func() string

	imagetest.Recorder
}

// doVendorData is the vendor-data DigitalOcean's metadata API reference
// shows in its example of /metadata/v1.json: its cloud-config, which
// keeps root's login, manages /etc/hosts and sets cloud-init's config and
// final modules, the per-boot scripts the proxy's user-data uses among
// them.
const doVendorData = "#cloud-config\ndisable_root: false\nmanage_etc_hosts: true\n\n" +
	"cloud_config_modules:\n - ssh\n - set_hostname\n - [ update_etc_hosts, once-per-instance ]\n\n" +
	"cloud_final_modules:\n - scripts-vendor\n - scripts-per-once\n - scripts-per-boot\n - scripts-per-instance\n - scripts-user\n"

// doDocument is /metadata/v1.json as the datasource reads it
// (DataSourceDigitalOcean._get_data and network_config): droplet_id,
// hostname, interfaces, public_keys, region, vendor_data, user_data and
// dns.nameservers; and as the agent's DigitalOcean part reads it
// (internal/provider/digitalocean/dovm, anchor.go): reserved_ip.ipv4 and
// the public interface's anchor_ipv4.
// DigitalOcean's document has more (tags, features, floating_ip,
// auth_key), which nothing on the VM reads.
type doDocument struct {
	DropletID  int64                    `json:"droplet_id"`
	Hostname   string                   `json:"hostname"`
	UserData   string                   `json:"user_data,omitempty"`
	VendorData string                   `json:"vendor_data"`
	PublicKeys []string                 `json:"public_keys"`
	Region     string                   `json:"region"`
	Interfaces map[string][]doInterface `json:"interfaces"`
	DNS        doDNS                    `json:"dns"`
	ReservedIP doReservedIP             `json:"reserved_ip"`
}

// doReservedIP is reserved_ip: {"ipv4": {"active": false}} without one,
// {"ipv4": {"active": true, "ip_address": …}} with one, as DigitalOcean's
// metadata reference shows it.
type doReservedIP struct {
	IPv4 struct {
		Active    bool   `json:"active"`
		IPAddress string `json:"ip_address,omitempty"`
	} `json:"ipv4"`
}

// doInterface is one of the document's interfaces, as the datasource's
// helper (convert_network_configuration) reads it.
type doInterface struct {
	IPv4 doIPv4 `json:"ipv4"`
	// AnchorIPv4 is the public interface's anchor, which the datasource
	// puts on the interface without its gateway.
	AnchorIPv4 *doIPv4 `json:"anchor_ipv4,omitempty"`
	MAC        string  `json:"mac"`
	Type       string  `json:"type"`
}

type doIPv4 struct {
	IPAddress string `json:"ip_address"`
	Netmask   string `json:"netmask"`
	Gateway   string `json:"gateway"`
}

type doDNS struct {
	Nameservers []string `json:"nameservers"`
}

// document is the Droplet's metadata. The Droplet has its public
// interface alone (the container has one): a Droplet's private
// interface, in its VPC, has no counterpart in the test's network. It was
// created with no SSH key, as the provider creates one.
func (m *Metadata) document() doDocument {
	mask := net.CIDRMask(m.Public.Bits(), 32)
	pub := doInterface{
		IPv4: doIPv4{IPAddress: m.Public.Addr().String(), Netmask: net.IP(mask).String(), Gateway: m.Gateway.String()},
		MAC:  m.MAC, Type: "public",
	}
	if m.Anchor.IsValid() {
		pub.AnchorIPv4 = &doIPv4{IPAddress: m.Anchor.Addr().String(), Netmask: net.IP(net.CIDRMask(m.Anchor.Bits(), 32)).String(),
			Gateway: m.AnchorGateway.String()}
	}
	doc := doDocument{
		DropletID: m.DropletID, Hostname: m.Hostname, UserData: m.UserData, VendorData: m.VendorData,
		PublicKeys: []string{}, Region: m.Region,
		Interfaces: map[string][]doInterface{"public": {pub}},
		DNS:        doDNS{Nameservers: m.Nameservers},
	}
	if m.ReservedIP != nil {
		if ip := m.ReservedIP(); ip != "" {
			doc.ReservedIP.IPv4.Active, doc.ReservedIP.IPv4.IPAddress = true, ip
		}
	}
	return doc
}

func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.RecordGet(w, r) {
		return
	}
	switch r.URL.Path {
	case "/metadata/v1.json":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m.document())
	case "/metadata/v1/user-data":
		io.WriteString(w, m.UserData)
	case "/metadata/v1/vendor-data":
		io.WriteString(w, m.VendorData)
	default:
		http.NotFound(w, r)
	}
}
