// Package bootstrap renders what turns a fresh VM into an egress proxy: a
// shell startup script, which Google's guest agent runs as root at every
// boot of every Google public Linux image (the images ship no cloud-init,
// so a #cloud-config would never run there). The reconciler renders it for
// each proxy and the gcp provider sends it as the instance's
// `startup-script` metadata, with the attributes the script reads at run
// time (see the Key constants).
//
// What the script does, every boot, in this order:
//   - installs tinyproxy and nftables, only if they are missing, with the
//     package's own tinyproxy service masked so it never listens;
//   - writes the proxy's configuration to /etc/egress-proxy, files no package
//     owns: tinyproxy with the proxy's credentials required (BasicAuth), the
//     CONNECT ports, the allowed sources, warnings only (no line per
//     connection), and the journal kept in memory, so no traffic log lands
//     on the disk;
//   - runs tinyproxy as a system user of its own under systemd, restarted
//     whenever it stops, and loads the nftables rules before every start:
//     ingress to the proxy port only from allowedSourceRanges (and the VM
//     itself), egress of the proxy's user refused to link-local (the
//     metadata server), RFC 1918, CGNAT, loopback, multicast and IPv6
//     ULA/link-local, and to any port but the CONNECT ports (DNS to the
//     configured resolvers excepted: on Compute Engine that is the metadata
//     server, on port 53 only);
//   - proves the proxy before it says so: the port answers, a request
//     without credentials gets 407, a CONNECT to the metadata server is
//     refused, and a CONNECT with credentials to the probe target succeeds;
//     then it writes the guest attribute egress/ready, or egress/error with
//     a one-line reason;
//   - calls home: one message {namespace, name, uid} on the call-home topic
//     (queue.CallHomeTopic, which only VMs publish on and where Reconcile
//     takes only a message naming a uid), published with the VM's own
//     service account, so the reconciler looks at the VM at once rather
//     than at its next sweep.
//
// Every value of the request that reaches the script is validated here and
// single-quoted in it; every value the script reads from the metadata
// server is checked against a pattern before it is used. So no request,
// and no attribute, can inject shell or configuration.
package bootstrap

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Instance metadata keys: the script and the attributes it reads at run
// time. The gcp provider sets them; the image test serves them from its
// stand-in metadata server.
const (
	// KeyStartupScript holds the script itself.
	KeyStartupScript = "startup-script"
	// KeyGuestAttributes set to "TRUE" lets the VM write guest attributes.
	KeyGuestAttributes = "enable-guest-attributes"
	// KeyProbeTarget is the host:port the self-test CONNECTs to with the
	// proxy's credentials; without it the script uses DefaultProbeTarget.
	KeyProbeTarget = "egress-probe-target"
	// KeyCallHomeTopic is the topic the VM publishes to once it is ready,
	// projects/P/topics/T; without it the VM does not call home.
	KeyCallHomeTopic = "egress-call-home-topic"
	// KeyPubSubEndpoint is the base URL of the Pub/Sub REST API; without it,
	// DefaultPubSubEndpoint. Tests point it at a stand-in.
	KeyPubSubEndpoint = "egress-pubsub-endpoint"
	// KeyNamespace, KeyName and KeyUID say which proxy the VM is: what its
	// call-home message carries.
	KeyNamespace = "egress-namespace"
	KeyName      = "egress-name"
	KeyUID       = "egress-uid"
)

// Guest attributes the script writes, in namespace GuestNamespace.
const (
	GuestNamespace = "egress"
	// GuestReady is written once the self-test passed.
	GuestReady = "ready"
	// GuestError holds the one-line reason the proxy cannot serve.
	GuestError = "error"
)

// Defaults the script falls back on.
const (
	// DefaultProbeTarget is a Google endpoint on 443: reachable from every
	// VM with an external address.
	DefaultProbeTarget    = "www.google.com:443"
	DefaultPubSubEndpoint = "https://pubsub.googleapis.com"
)

// DefaultConnectPorts are the ports a CONNECT may reach when the spec names
// none: HTTPS and HTTP.
var DefaultConnectPorts = []int32{443, 80}

// Config is what the script is rendered from: one proxy's port, sources,
// CONNECT ports and credentials.
type Config struct {
	Port                int32
	AllowedSourceRanges []string
	// ConnectPorts are the ports a CONNECT may reach, and the only ports
	// the proxy may open connections to; empty means DefaultConnectPorts.
	ConnectPorts []int32
	Credentials  proxy.Credentials
}

// ForProxy is the Config of a proxy's spec and credentials.
func ForProxy(spec proxy.Spec, creds proxy.Credentials) Config {
	port := spec.Port
	if port == 0 {
		port = proxy.DefaultPort
	}
	return Config{Port: port, AllowedSourceRanges: spec.AllowedSourceRanges, ConnectPorts: spec.ConnectPorts, Credentials: creds}
}

// rendered is Config checked and in the form the templates write.
type rendered struct {
	Port               int32
	Allow4, Allow6     []string
	ConnectPorts       []int32
	Username, Password string
	DefaultProbeTarget string
	TinyproxyConf      string
}

func (c Config) check() (rendered, error) {
	r := rendered{Port: c.Port, DefaultProbeTarget: DefaultProbeTarget}
	if c.Port < 1 || c.Port > 65535 {
		return r, fmt.Errorf("bootstrap: port %d is outside 1-65535", c.Port)
	}
	if len(c.AllowedSourceRanges) == 0 {
		return r, fmt.Errorf("bootstrap: no allowed source ranges: the proxy would serve nobody")
	}
	for _, s := range c.AllowedSourceRanges {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return r, fmt.Errorf("bootstrap: allowed source range %q is not a CIDR: %w", s, err)
		}
		if p.Addr().Is4In6() {
			return r, fmt.Errorf("bootstrap: allowed source range %q is an IPv4-mapped IPv6 prefix: give its IPv4 form", s)
		}
		// Re-serialised from the parsed value, so only the canonical text
		// of a prefix ever reaches the script.
		p = p.Masked()
		if p.Addr().Is4() {
			r.Allow4 = append(r.Allow4, p.String())
		} else {
			r.Allow6 = append(r.Allow6, p.String())
		}
	}
	r.ConnectPorts = slices.Clone(c.ConnectPorts)
	if len(r.ConnectPorts) == 0 {
		r.ConnectPorts = slices.Clone(DefaultConnectPorts)
	}
	for _, p := range r.ConnectPorts {
		if p < 1 || p > 65535 {
			return r, fmt.Errorf("bootstrap: CONNECT port %d is outside 1-65535", p)
		}
	}
	slices.Sort(r.ConnectPorts)
	r.ConnectPorts = slices.Compact(r.ConnectPorts)
	if err := c.Credentials.Validate(); err != nil {
		return r, fmt.Errorf("bootstrap: %w", err)
	}
	r.Username, r.Password = c.Credentials.Username, c.Credentials.Password
	var b bytes.Buffer
	if err := tinyproxyConf.Execute(&b, r); err != nil {
		return r, err
	}
	r.TinyproxyConf = b.String()
	return r, nil
}

// Tinyproxy returns the tinyproxy configuration the script writes to
// /etc/egress-proxy/tinyproxy.conf.
func Tinyproxy(c Config) (string, error) {
	r, err := c.check()
	return r.TinyproxyConf, err
}

// Render returns the startup script for c.
func Render(c Config) (string, error) {
	r, err := c.check()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := script.Execute(&b, r); err != nil {
		return "", fmt.Errorf("bootstrap: rendering the startup script: %w", err)
	}
	return b.String(), nil
}

//go:embed startup-script.sh.tmpl
var scriptTemplate string

var funcs = template.FuncMap{"q": shellQuote}

var script = template.Must(template.New("startup-script").Funcs(funcs).Parse(scriptTemplate))

// tinyproxyConf allows the VM itself (the script's self-test) besides the
// spec's ranges; the nftables input rule admits loopback for the same
// reason.
var tinyproxyConf = template.Must(template.New("tinyproxy.conf").Parse(`# Rendered by egress-proxies; rewritten at every boot.
Port {{.Port}}
Timeout 600
MaxClients 200
# Warnings only: no line per connection, and no log file.
LogLevel Warning
DisableViaHeader Yes
BasicAuth {{.Username}} {{.Password}}
Allow 127.0.0.1
Allow ::1
{{- range .Allow4}}
Allow {{.}}
{{- end}}
{{- range .Allow6}}
Allow {{.}}
{{- end}}
{{- range .ConnectPorts}}
ConnectPort {{.}}
{{- end}}
`))

// shellQuote single-quotes a value for the shell. Every value is validated
// to a safe alphabet before it gets here; quoting is the second wall.
func shellQuote(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int32:
		s = strconv.Itoa(int(x))
	default:
		s = fmt.Sprint(x)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
