package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/imds"
	"github.com/egress-proxies/egress/internal/vm/imds/azureimds"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Boot is the agent's Reporter on a cloud-init boot (Hetzner's servers,
// and any cloud whose VMs get user-data): no metadata server carries the
// configuration or takes a report there, and the VM has no identity to
// call home with. Its settings are files the user-data wrote, one per
// metadata key of GCE's (vmconfig.BootDir: egress-config,
// egress-probe-target, …), read once at boot: such a VM is never handed
// a change, a change replaces it. It says what it serves in the
// readiness file (vmconfig.Readiness), which the engine serves with its
// status on the proxy port to the control plane's status credential: the
// control plane asks, where a GCE VM would call home.
type Boot struct {
	// Dir holds the settings, one file per key.
	Dir string
	// Readiness is the readiness file the engine reads (its -readiness):
	// on tmpfs, so a reboot starts from "not ready".
	Readiness string
	// Instance and Zone say which VM this is, beside the readiness, when
	// the cloud's metadata service said (EC2's IMDSv2: package imds).
	Instance, Zone string
}

var keyPattern = regexp.MustCompile(`^[a-z0-9-]+$`)

// Attr reads the setting key, "" when the user-data wrote none.
func (b Boot) Attr(key string) (string, error) {
	if !keyPattern.MatchString(key) {
		return "", fmt.Errorf("agent: %q is not a setting's name", key)
	}
	v, err := os.ReadFile(filepath.Join(b.Dir, key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("agent: reading the boot setting %s: %w", key, err)
	}
	return string(v), nil
}

// Identify reads which instance the VM is from the metadata service the
// setting egress-imds names into b.Instance and b.Zone, which the
// readiness file then says: EC2's (vmconfig.EC2MetadataURL, IMDSv2
// only: package imds), its instance id and availability zone; or
// Azure's (vmconfig.AzureMetadataURL, told by its /metadata path:
// package azureimds), the VM's vmId and its location, with its zone
// after a dash when it has one. Without the setting (a cloud whose VMs
// read none) it does nothing.
func (b *Boot) Identify(ctx context.Context) error {
	base, err := b.imdsBase()
	if err != nil || base == "" {
		return err
	}
	if isAzureMetadata(base) {
		id, err := (&azureimds.Client{Base: base}).Identity(ctx)
		if err != nil {
			return fmt.Errorf("agent: which VM this is: %w", err)
		}
		b.Instance, b.Zone = id.VMID, id.PlacementZone()
		return nil
	}
	id, err := (&imds.Client{Base: base}).Identity(ctx)
	if err != nil {
		return fmt.Errorf("agent: which instance this is: %w", err)
	}
	b.Instance, b.Zone = id.InstanceID, id.Zone
	return nil
}

// imdsBase is the setting egress-imds, trimmed; "" without it.
func (b Boot) imdsBase() (string, error) {
	base, err := b.Attr(vmconfig.KeyIMDS)
	return strings.TrimSpace(base), err
}

// isAzureMetadata tells Azure's metadata service (vmconfig.AzureMetadataURL)
// from EC2's by its /metadata path.
func isAzureMetadata(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.TrimSuffix(u.Path, "/") == "/metadata"
}

// IMDS is a client of EC2's metadata service when the setting egress-imds
// names it (IMDSv2 only: package imds), which a delegated IPv6 prefix is
// read from; nil without the setting, and on Azure, whose VMs get no
// prefix to read.
func (b Boot) IMDS() (*imds.Client, error) {
	base, err := b.imdsBase()
	if err != nil || base == "" || isAzureMetadata(base) {
		return nil, err
	}
	return &imds.Client{Base: base}, nil
}

// replace replaces the setting key whole, as the user-data wrote it
// (root's alone): written beside it, then renamed.
func (b Boot) replace(key string, value []byte) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("agent: %q is not a setting's name", key)
	}
	path := filepath.Join(b.Dir, key)
	if err := os.WriteFile(path+".new", value, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path+".new", 0o600); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// ProbeTarget is the setting egress-probe-target.
func (b Boot) ProbeTarget(context.Context) (string, error) {
	return b.Attr(vmconfig.KeyProbeTarget)
}

// Ready writes that the VM serves generation. The egress address a
// follower said (Egress) stays: it does not depend on the configuration.
func (b Boot) Ready(_ context.Context, generation int64) error {
	r := vmconfig.Readiness{Generation: generation, Ready: true, Instance: b.Instance, Zone: b.Zone}
	if prev, err := b.read(); err == nil {
		r.Egress = prev.Egress
	}
	if err := b.write(r); err != nil {
		return fmt.Errorf("agent: writing the readiness file: %w", err)
	}
	return nil
}

// Failed writes why the VM cannot serve generation. When the VM serves
// still what it served before (servedStill: a change refused, on a VM
// whose user data changes in place), the file keeps saying that it is
// ready at the generation it serves, with the reason beside it, as a GCE
// VM keeps egress/ready and writes egress/error.
func (b Boot) Failed(_ context.Context, generation int64, reason string, servedStill bool) {
	r := vmconfig.Readiness{Generation: max(generation, 0), Error: reason, Instance: b.Instance, Zone: b.Zone}
	if prev, err := b.read(); err == nil {
		r.Egress = prev.Egress
		if servedStill && prev.Ready {
			r.Generation, r.Ready = prev.Generation, true
		}
	}
	// The reason is all a caller acts on: a write that fails leaves "not
	// ready", which the control plane's boot timeout catches.
	_ = b.write(r)
}

// read reads the readiness file as it is now.
func (b Boot) read() (vmconfig.Readiness, error) {
	var r vmconfig.Readiness
	body, err := os.ReadFile(b.Readiness)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(body, &r)
}

// write replaces the readiness file whole, readable by the engine's user:
// it holds no secret.
func (b Boot) write(r vmconfig.Readiness) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(b.Readiness), 0o755); err != nil {
		return err
	}
	tmp := b.Readiness + ".new"
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, b.Readiness)
}

// Egress says, in the readiness file the agent wrote at this boot, the
// address the VM's outbound traffic leaves from ("" for its own): a
// Follower's Report (FollowEnv), which runs after the agent's apply, so the
// file it changes says what that apply said, and only its egress
// changes.
func (b Boot) Egress(_ context.Context, egress string) error {
	r, err := b.read()
	if err != nil {
		return fmt.Errorf("agent: the readiness file %s to say the egress address in: %w", b.Readiness, err)
	}
	r.Egress = egress
	if err := b.write(r); err != nil {
		return fmt.Errorf("agent: writing the readiness file: %w", err)
	}
	return nil
}
