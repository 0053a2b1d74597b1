package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/imds/azureimds"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// UserDataWatch follows, on a cloud-init boot, a user data the cloud
// changes without a reboot (the setting egress-watch-userdata: Azure's
// IMDS userData, vmconfig.AzureUserDataURL), and applies the
// configuration of each new one in place, as a GCE VM's agent applies a
// change of egress-config (Agent.Run): the filter, the engine's file, a
// reload that keeps the tunnels, the self-test, and on failure the
// configuration served before put back, with the reason said in the
// readiness file beside the generation served still. IMDS has no wait
// for a change, so it asks every Interval, and backs off on errors.
//
// What it applies is the engine's configuration (egress-config) of a
// user-data of package cloudinit's, whose generation is not the one
// served: the other settings of a new user-data (the engine's URL, the
// probe target) are a create's, which a change does not touch. A user
// data that is not one (not base64, not a cloudinit.Render user-data, an
// engine configuration that does not load) is reported and not applied,
// and neither is it again until it changes. A configuration applied is
// written to the boot's egress-config too, so that a reboot serves it
// from the start.
type UserDataWatch struct {
	// Agent applies a configuration; its Reporter is Boot.
	Agent *Agent
	// Boot is the boot's settings, whose egress-config a configuration
	// applied replaces.
	Boot Boot
	// URL is the user data's (the setting egress-watch-userdata).
	URL string
	// IMDS asks the service; nil is a client of its own.
	IMDS *azureimds.Client
	// Interval is the time between two reads, 0 DefaultWatchInterval;
	// MaxBackoff the longest wait after errors, 0 DefaultWatchBackoff.
	Interval, MaxBackoff time.Duration

	// refused is the SHA-256 of the user data last refused.
	refused [sha256.Size]byte
}

// The watch's pace: Azure's IMDS takes 5 requests a second per VM; one
// every 5 s finds a change within the time a GCE VM's wait does, and an
// unreachable service is asked at most once a minute.
const (
	DefaultWatchInterval = 5 * time.Second
	DefaultWatchBackoff  = time.Minute
)

// Outcome is what one read of the user data led to.
type Outcome string

const (
	// Unchanged: the user data's configuration is the one served, or a
	// user data refused already.
	Unchanged Outcome = "unchanged"
	// Applied: a new generation is served.
	Applied Outcome = "applied"
	// Refused: the user data is not one to apply, or its configuration
	// failed and the one before is served still; the readiness file
	// says why.
	Refused Outcome = "refused"
	// Unreachable: the service did not answer the user data.
	Unreachable Outcome = "unreachable"
)

// Check reads the user data once and applies its configuration if it is
// a new one. The error says why it was not applied or not read.
func (w *UserDataWatch) Check(ctx context.Context) (Outcome, error) {
	client := w.IMDS
	if client == nil {
		client = &azureimds.Client{}
	}
	body, err := client.GetURL(ctx, w.URL)
	if err != nil {
		return Unreachable, err
	}
	sum := sha256.Sum256(body)
	if sum == w.refused {
		return Unchanged, nil
	}
	text, cfg, err := configOf(body)
	if err != nil {
		w.refused = sum
		reason := oneLine(fmt.Sprintf("the user data is not one to apply: %v; the configuration served before is served still", err))
		w.Agent.Log.Error("configuration not applied", slog.String("reason", reason))
		w.Agent.reporter().Failed(ctx, -1, reason, true)
		return Refused, fmt.Errorf("agent: %s", reason)
	}
	if served, ok := w.served(); ok && served.Generation == cfg.Generation && reflect.DeepEqual(served.TrafficStop, cfg.TrafficStop) {
		// The same generation is the same configuration, but for the
		// stop at the namespace's budget, which the control plane hands
		// over at the generation served (internal/reconcile, stop.go).
		return Unchanged, nil
	}
	if err := w.Agent.Apply(ctx, text, true); err != nil {
		w.refused = sum
		return Refused, err
	}
	w.refused = [sha256.Size]byte{}
	if err := w.Boot.replace(vmconfig.KeyConfig, []byte(text)); err != nil {
		// The VM serves it; a reboot would serve the one before until
		// the next read.
		w.Agent.Log.Warn("the boot's egress-config not replaced", slog.Any("error", err))
	}
	return Applied, nil
}

// configOf reads the engine's configuration out of an answer of the user
// data: base64 of a cloudinit.Render user-data, whose egress-config the
// engine loads.
func configOf(answer []byte) (string, vmconfig.Config, error) {
	ud, err := azureimds.DecodeUserData(answer)
	if err != nil {
		return "", vmconfig.Config{}, err
	}
	boot, err := cloudinit.Parse(ud)
	if err != nil {
		return "", vmconfig.Config{}, err
	}
	text := strings.TrimSpace(boot.Setting(vmconfig.KeyConfig))
	if text == "" {
		return "", vmconfig.Config{}, fmt.Errorf("the user-data carries no %s", vmconfig.KeyConfig)
	}
	cfg, err := engine.ReadConfig([]byte(text))
	if err != nil {
		return "", vmconfig.Config{}, err
	}
	return text, cfg, nil
}

// served is the configuration the engine serves (config.json), false
// when there is none.
func (w *UserDataWatch) served() (vmconfig.Config, bool) {
	b, err := os.ReadFile(filepath.Join(w.Agent.Dir, ConfigFile))
	if err != nil {
		return vmconfig.Config{}, false
	}
	cfg, err := engine.ReadConfig(b)
	if err != nil {
		return vmconfig.Config{}, false
	}
	return cfg, true
}

// Run checks the user data until ctx ends: every Interval, and after
// errors reading it less often, up to MaxBackoff.
func (w *UserDataWatch) Run(ctx context.Context) error {
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		outcome, err := w.Check(ctx)
		if outcome == Unreachable && ctx.Err() == nil {
			w.Agent.Log.Warn("the user data not read", slog.String("url", w.URL), slog.Any("error", err))
		}
		wait = w.next(outcome, wait)
	}
}

// next is the wait after an outcome, wait the one before it: Interval,
// doubled at each Unreachable after the first, up to MaxBackoff.
func (w *UserDataWatch) next(outcome Outcome, wait time.Duration) time.Duration {
	interval, most := w.Interval, w.MaxBackoff
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	if most <= 0 {
		most = DefaultWatchBackoff
	}
	if outcome != Unreachable || wait < interval {
		return interval
	}
	return min(2*wait, max(most, interval))
}
