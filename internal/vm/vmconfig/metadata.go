package vmconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Instance metadata keys: the script, the engine's configuration and the
// attributes the script reads at run time. The gcp provider sets them; the
// image test serves them from its stand-in metadata server.
const (
	// KeyStartupScript holds the script itself.
	KeyStartupScript = "startup-script"
	// KeyConfig holds the engine's configuration (vmconfig.Config as
	// JSON): one item, so that a watcher of the metadata server follows one
	// key.
	KeyConfig = "egress-config"
	// KeyEngineURL is the URL of the engine binary (an object of the
	// deployment's bucket), downloaded with the VM's token.
	KeyEngineURL = "egress-engine-url"
	// KeyEngineSHA256 is the binary's SHA-256, in hex: the script installs
	// nothing else.
	KeyEngineSHA256 = "egress-engine-sha256"
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
	// KeyPool, on a warm pool's VM only, is the pool whose member it is:
	// its call-home names the member by pool and name (KeyName), as a
	// member has no namespace. A claim's Reconfigure removes it.
	KeyPool = "egress-pool"
	// KeyIMDS, a cloud-init boot's setting on EC2 and Azure, is the root
	// URL of the instance metadata service (EC2MetadataURL, asked IMDSv2
	// only; AzureMetadataURL, asked with "Metadata: true"), which the
	// agent asks which instance it is (its id and zone), to say so beside
	// its readiness.
	KeyIMDS = "egress-imds"
	// KeyFollow, a cloud-init boot's setting on a Static proxy's VM of a
	// cloud whose static address needs the VM's own doing (a route of
	// its own), names the VM-side part the agent runs for the VM's life
	// to follow it and the URL that part reads, "NAME URL" (Follow,
	// ParseFollow): `egress-proxy agent -follow` runs it, from the
	// parts cmd/egress-proxy links (internal/clouds/cloudsvm), each in
	// its cloud's folder.
	KeyFollow = "egress-follow"
	// KeyWatchUserData, a cloud-init boot's setting on a cloud whose VM's
	// user data changes without a reboot (Azure), is the instance metadata
	// URL of that user data (AzureUserDataURL): the agent polls it and
	// applies the configuration of a new user-data (cloudinit.Render's)
	// in place.
	KeyWatchUserData = "egress-watch-userdata"
)

// AzureUserDataURL is Azure's instance metadata service's answer of the
// VM's userData (base64, as set on the VM), asked with the header
// "Metadata: true".
const AzureUserDataURL = "http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text"

// AzureMetadataURL is Azure's instance metadata service's root on every
// VM (the setting egress-imds of an Azure VM, plugin.Boot.MetadataURL):
// the agent tells it from EC2's (EC2MetadataURL, the host's root) by its
// path, and asks it which VM it is with the header "Metadata: true".
const AzureMetadataURL = "http://169.254.169.254/metadata"

// EC2MetadataURL is EC2's instance metadata service on every instance.
const EC2MetadataURL = "http://169.254.169.254"

// Guest attributes the script writes, in namespace GuestNamespace.
const (
	GuestNamespace = "egress"
	// GuestReady is written once the self-test passed.
	GuestReady = "ready"
	// GuestError holds the one-line reason the proxy cannot serve, or
	// could not serve the last configuration it was given. A reason about
	// a configuration that loaded starts "generation N: " (RefusedGeneration
	// reads it); beside a GuestReady of an earlier generation, it is a
	// change the VM refused and rolled back from, still serving that one.
	GuestError = "error"
	// GuestTraffic holds the engine's counters, vmconfig.Stats as JSON
	// with a "reportTime" added, rewritten every TrafficInterval.
	GuestTraffic = "traffic"
)

// Defaults the script falls back on.
const (
	// DefaultProbeTarget is a Google endpoint on 443: reachable from every
	// VM with an external address.
	DefaultProbeTarget    = "www.google.com:443"
	DefaultPubSubEndpoint = "https://pubsub.googleapis.com"
	// TrafficInterval is how often the VM reports its counters.
	TrafficInterval = "30s"
	// EnginePath is where the script installs the engine binary.
	EnginePath = "/usr/local/bin/egress-proxy"
)

// A cloud-init boot's places (internal/bootstrap/cloudinit writes the
// user-data that makes them; the script and the agent read them).
const (
	// BootDir holds the settings the user-data carries, one file per
	// metadata key of GCE's (KeyConfig, KeyEngineURL, KeyEngineSHA256,
	// KeyProbeTarget): what a GCE VM reads from its metadata server.
	BootDir = "/etc/egress-proxy/boot"
	// BootScript is the bootstrap script, in cloud-init's per-boot
	// scripts: cloud-init runs it at every boot, as Google's guest agent
	// runs a startup script.
	BootScript = "/var/lib/cloud/scripts/per-boot/egress-bootstrap"
	// ReadinessFile is where the agent says what the VM serves
	// (Readiness), and the engine reads it: on tmpfs, so each boot starts
	// from "not ready".
	ReadinessFile = "/run/egress-proxy/readiness.json"
)

var refusedRE = regexp.MustCompile(`^generation ([0-9]{1,18}): `)

// RefusedGeneration reads the generation a GuestError names, as the VM's
// agent writes it ("generation 7: the self-test …"), and reports false
// for a reason that names none (a configuration that did not load, a
// failure of the startup script itself).
func RefusedGeneration(reason string) (int64, bool) {
	m := refusedRE.FindStringSubmatch(reason)
	if m == nil {
		return 0, false
	}
	g, err := strconv.ParseInt(m[1], 10, 64)
	return g, err == nil
}

var followNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Follow is the setting KeyFollow's value that asks a VM to run the
// VM-side part name, reading url: one line, so that the user-data
// carries one more file, not two.
func Follow(name, url string) string { return name + " " + url }

// ParseFollow reads a setting KeyFollow: the part's name (lower-case
// letters, digits and '-') and the http URL it reads, one space between.
func ParseFollow(setting string) (name, url string, err error) {
	name, url, _ = strings.Cut(strings.TrimSpace(setting), " ")
	if !followNameRE.MatchString(name) || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) || strings.ContainsAny(url, " \t\n") {
		return "", "", fmt.Errorf("vmconfig: the setting %s is %q: want a part's name (lower-case letters, digits, '-') and its http(s) URL, one space between", KeyFollow, setting)
	}
	return name, url, nil
}
