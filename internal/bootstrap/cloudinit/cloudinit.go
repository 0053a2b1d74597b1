// Package cloudinit renders the user-data that turns a fresh VM of a
// cloud whose images run cloud-init (Hetzner's; the clouds after it) into
// an egress proxy: the same installation, filter, engine and agent as a
// GCE VM's startup script (package bootstrap), delivered as a
// #cloud-config whose write_files carry
//
//   - the settings a GCE VM reads from its metadata server, one file per
//     metadata key in vmconfig.BootDir: the engine's configuration
//     (egress-config), the engine binary's URL and SHA-256, the self-test's
//     probe target;
//   - the bootstrap script (bootstrap.CloudInitScript) in cloud-init's
//     per-boot scripts (vmconfig.BootScript), which cloud-init runs at
//     every boot as Google's guest agent runs a startup script: a second
//     boot installs nothing.
//
// Nothing in it lets a reader use the proxy or its status (a cloud's API
// returns user-data to anyone holding the project's token): the engine's
// configuration holds salted hashes of the proxy's password and of the
// control plane's status credential (package vmstatus), and the engine's
// URL is one anybody may read. The document is JSON under the
// #cloud-config line (YAML's flow style, which cloud-init reads), so that
// Parse reads it back exactly, with no YAML library on either side.
//
// Renderer is the cloud-init clouds' vmside.Renderer, set from each
// plugin's Boot: it compresses the user-data for a cloud with a small
// limit (Gzip), names the instance metadata service the agent asks which
// instance it is (IMDS) and, for a Static proxy, the cloud's VM-side
// part that the VM runs to leave from its static address (Follow).
package cloudinit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Header is the first line of every user-data this package renders.
const Header = "#cloud-config"

// Renderer makes a VM's user-data from a provider's create request.
type Renderer struct {
	// EngineURL is where the VM downloads the engine binary without any
	// credential (PROXY_ENGINE_PUBLIC_URL); EngineSHA256 its SHA-256, the
	// only binary the VM installs.
	EngineURL, EngineSHA256 string
	// ProbeTarget is the host:port the self-test reaches through the
	// proxy; empty is vmconfig.DefaultProbeTarget.
	ProbeTarget string
	// Status is the status access of the VM of uid with status id id
	// (vmstatus.Key.Access with the control plane's addresses).
	Status func(ctx context.Context, uid, id string) (*vmconfig.StatusAccess, error)
	// IMDS is the instance metadata service the VM's agent asks which
	// instance it is (vmconfig.KeyIMDS: EC2's, vmconfig.EC2MetadataURL);
	// empty on a cloud whose VMs ask none.
	IMDS string
	// Follow names the cloud's VM-side part that a Static proxy's VM
	// runs so that its outbound traffic leaves from its static address,
	// and the URL it reads (vmconfig.KeyFollow, "NAME URL": the plugin's
	// Boot.Follow), written for a request with StaticIP only; empty on a
	// cloud whose static address is the VM's own, which needs nothing of
	// the VM.
	Follow string
	// WatchUserData is the instance metadata URL of the VM's user data,
	// which its agent polls for a new configuration
	// (vmconfig.KeyWatchUserData: Azure's, vmconfig.AzureUserDataURL);
	// empty on a cloud whose user data is fixed at create.
	WatchUserData string
	// IPv6PrefixLength is the length of the IPv6 prefix the cloud routes
	// to a VM around its own address (the plugin's IPv6Prefix): a
	// configuration that rotates IPv6 sources but cannot name the prefix
	// yet (a create) carries it, and the VM finds its prefix with it
	// (vmconfig.Config.IPv6PrefixLength).
	IPv6PrefixLength int
	// Gzip compresses the user-data, which cloud-init reads as well
	// (it decompresses a user-data that starts with gzip's magic number):
	// EC2 takes 16 KiB of user-data, and a proxy's is about 10 KB before
	// its configuration grows with its ranges and users (about 4 KB
	// compressed: TestEC2UserData logs both).
	Gzip bool
}

var (
	urlPattern   = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[A-Za-z0-9._~%+/-]+$`)
	shaPattern   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	probePattern = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)
)

// Check says what is wrong with the renderer's settings, the patterns the
// bootstrap script holds them to at boot: refused at start-up rather than
// at every VM's boot.
func (r Renderer) Check() error {
	switch {
	case !urlPattern.MatchString(r.EngineURL):
		return fmt.Errorf("cloudinit: the engine's URL %q is not an http(s) URL of an object", r.EngineURL)
	case !shaPattern.MatchString(r.EngineSHA256):
		return fmt.Errorf("cloudinit: the engine's SHA-256 %q is not 64 lower-case hex digits", r.EngineSHA256)
	case r.ProbeTarget != "" && !probePattern.MatchString(r.ProbeTarget):
		return fmt.Errorf("cloudinit: the probe target %q is not host:port", r.ProbeTarget)
	case r.Status == nil:
		return errors.New("cloudinit: no status access: the control plane could not read whether a VM serves")
	}
	return nil
}

// UserData renders the user-data of the VM req makes: req.Engine with the
// status access of req.UID added, and the script for it.
func (r Renderer) UserData(req provider.CreateRequest) (string, error) {
	if req.Engine == nil {
		return "", errors.New("cloudinit: the request carries no engine configuration")
	}
	if err := r.Check(); err != nil {
		return "", err
	}
	engine := *req.Engine
	// The VM's own status id, which its provider labels it with
	// (vmside.LabelStatusID): its credential and sign key are its
	// alone.
	status, err := r.Status(context.Background(), req.UID, vmstatus.StatusID(req))
	if err != nil {
		return "", fmt.Errorf("cloudinit: the status access of %s: %w", req.UID, err)
	}
	engine.Status = status
	if vmconfig.RotatesIPv6(engine.IPv6Egress) && engine.IPv6Prefix == "" {
		engine.IPv6PrefixLength = r.IPv6PrefixLength
	}
	s := Settings{EngineURL: r.EngineURL, EngineSHA256: r.EngineSHA256, ProbeTarget: r.ProbeTarget, IMDS: r.IMDS, WatchUserData: r.WatchUserData}
	if req.StaticIP {
		// An Ephemeral proxy's VM leaves by its own address: it gets no
		// setting, so it never waits for a static address (a
		// DigitalOcean reserved IP) nor touches its route.
		s.Follow = r.Follow
	}
	ud, err := Render(engine, s)
	if err != nil || !r.Gzip {
		return ud, err
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write([]byte(ud)); err != nil {
		return "", fmt.Errorf("cloudinit: compressing the user-data: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("cloudinit: compressing the user-data: %w", err)
	}
	return b.String(), nil
}

// Settings are what the VM reads besides its engine's configuration.
type Settings struct {
	EngineURL, EngineSHA256, ProbeTarget string
	// IMDS is the setting egress-imds (Renderer.IMDS), when set.
	IMDS string
	// Follow is the setting egress-follow (Renderer.Follow), when set.
	Follow string
	// WatchUserData is the setting egress-watch-userdata
	// (Renderer.WatchUserData), when set.
	WatchUserData string
}

// file is one entry of cloud-init's write_files.
type file struct {
	Path        string `json:"path"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
	Content     string `json:"content"`
}

// document is the #cloud-config this package writes: write_files only.
type document struct {
	WriteFiles []file `json:"write_files"`
}

// Render renders the user-data of a VM that serves engine, with settings.
func Render(engine vmconfig.Config, s Settings) (string, error) {
	script, err := bootstrap.CloudInitScript(engine)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(engine)
	if err != nil {
		return "", fmt.Errorf("cloudinit: the engine's configuration: %w", err)
	}
	setting := func(key, value string) file {
		return file{Path: path.Join(vmconfig.BootDir, key), Owner: "root:root", Permissions: "0600", Content: value}
	}
	doc := document{WriteFiles: []file{
		setting(vmconfig.KeyConfig, string(config)),
		setting(vmconfig.KeyEngineURL, s.EngineURL),
		setting(vmconfig.KeyEngineSHA256, s.EngineSHA256),
	}}
	if s.ProbeTarget != "" {
		doc.WriteFiles = append(doc.WriteFiles, setting(vmconfig.KeyProbeTarget, s.ProbeTarget))
	}
	if s.IMDS != "" {
		doc.WriteFiles = append(doc.WriteFiles, setting(vmconfig.KeyIMDS, s.IMDS))
	}
	if s.Follow != "" {
		doc.WriteFiles = append(doc.WriteFiles, setting(vmconfig.KeyFollow, s.Follow))
	}
	if s.WatchUserData != "" {
		doc.WriteFiles = append(doc.WriteFiles, setting(vmconfig.KeyWatchUserData, s.WatchUserData))
	}
	doc.WriteFiles = append(doc.WriteFiles, file{Path: vmconfig.BootScript, Owner: "root:root", Permissions: "0700", Content: script})
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return "", err
	}
	return Header + "\n" + string(b) + "\n", nil
}

// gzipMagic starts a gzip stream, which cloud-init decompresses.
const gzipMagic = "\x1f\x8b"

// maxUserData bounds what Parse decompresses: far over any user-data
// this package renders.
const maxUserData = 1 << 20

// Boot is a user-data this package rendered, read back.
type Boot struct {
	// Files are the files it writes, by path.
	Files map[string]string
}

// Parse reads a user-data Render made, compressed (Renderer.Gzip) or
// not.
func Parse(userData string) (Boot, error) {
	if strings.HasPrefix(userData, gzipMagic) {
		zr, err := gzip.NewReader(strings.NewReader(userData))
		if err != nil {
			return Boot{}, fmt.Errorf("cloudinit: the compressed user-data: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxUserData))
		if err != nil {
			return Boot{}, fmt.Errorf("cloudinit: the compressed user-data: %w", err)
		}
		userData = string(b)
	}
	rest, ok := strings.CutPrefix(userData, Header+"\n")
	if !ok {
		return Boot{}, fmt.Errorf("cloudinit: the user-data does not start with %s", Header)
	}
	var doc document
	if err := json.Unmarshal([]byte(rest), &doc); err != nil {
		return Boot{}, fmt.Errorf("cloudinit: the user-data is not one this package rendered: %w", err)
	}
	b := Boot{Files: map[string]string{}}
	for _, f := range doc.WriteFiles {
		b.Files[f.Path] = f.Content
	}
	return b, nil
}

// Setting is the setting key the user-data writes, "" if none.
func (b Boot) Setting(key string) string { return b.Files[path.Join(vmconfig.BootDir, key)] }

// Engine is the engine's configuration the user-data carries.
func (b Boot) Engine() (vmconfig.Config, error) {
	text := b.Setting(vmconfig.KeyConfig)
	if text == "" {
		return vmconfig.Config{}, errors.New("cloudinit: the user-data carries no engine configuration")
	}
	var c vmconfig.Config
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		return vmconfig.Config{}, fmt.Errorf("cloudinit: the user-data's engine configuration: %w", err)
	}
	return c, nil
}
