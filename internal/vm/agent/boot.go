package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/imds"
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
// setting egress-imds names (EC2's, IMDSv2 only: package imds) into
// b.Instance and b.Zone, which the readiness file then says; without the
// setting (a cloud whose VMs read none) it does nothing.
func (b *Boot) Identify(ctx context.Context) error {
	c, err := b.IMDS()
	if err != nil || c == nil {
		return err
	}
	id, err := c.Identity(ctx)
	if err != nil {
		return fmt.Errorf("agent: which instance this is: %w", err)
	}
	b.Instance, b.Zone = id.InstanceID, id.Zone
	return nil
}

// IMDS is a client of the metadata service the setting egress-imds
// names (EC2's, IMDSv2 only: package imds); nil without the setting, on
// a cloud whose VMs read none.
func (b Boot) IMDS() (*imds.Client, error) {
	base, err := b.Attr(vmconfig.KeyIMDS)
	if err != nil || strings.TrimSpace(base) == "" {
		return nil, err
	}
	return &imds.Client{Base: strings.TrimSpace(base)}, nil
}

// ProbeTarget is the setting egress-probe-target.
func (b Boot) ProbeTarget(context.Context) (string, error) {
	return b.Attr(vmconfig.KeyProbeTarget)
}

// Ready writes that the VM serves generation.
func (b Boot) Ready(_ context.Context, generation int64) error {
	if err := b.write(vmconfig.Readiness{Generation: generation, Ready: true, Instance: b.Instance, Zone: b.Zone}); err != nil {
		return fmt.Errorf("agent: writing the readiness file: %w", err)
	}
	return nil
}

// Failed writes why the VM cannot serve generation.
func (b Boot) Failed(_ context.Context, generation int64, reason string) {
	// The reason is all a caller acts on: a write that fails leaves "not
	// ready", which the control plane's boot timeout catches.
	_ = b.write(vmconfig.Readiness{Generation: max(generation, 0), Error: reason, Instance: b.Instance, Zone: b.Zone})
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
// address the VM's outbound traffic leaves from ("" for its own): the
// anchor's Report (Anchor), which runs after the agent's apply, so the
// file it changes says what that apply said, and only its egress
// changes.
func (b Boot) Egress(_ context.Context, egress string) error {
	body, err := os.ReadFile(b.Readiness)
	if err != nil {
		return fmt.Errorf("agent: the readiness file to say the egress address in: %w", err)
	}
	var r vmconfig.Readiness
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("agent: the readiness file %s: %w", b.Readiness, err)
	}
	r.Egress = egress
	if err := b.write(r); err != nil {
		return fmt.Errorf("agent: writing the readiness file: %w", err)
	}
	return nil
}
