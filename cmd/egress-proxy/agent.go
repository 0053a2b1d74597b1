package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/egress-proxies/egress/internal/clouds/cloudsvm"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// systemd is the VM's system as the agent uses it: nft loads the filter,
// systemctl reloads the engine (SIGHUP, its ExecReload) or starts it, and
// every start loads the filter again first (its ExecStartPre).
type systemd struct{ unit string }

func (s systemd) LoadFilter(ctx context.Context, path string) error {
	return command(ctx, "nft", "-f", path)
}

func (s systemd) ReloadEngine(ctx context.Context) error {
	return command(ctx, "systemctl", "reload-or-restart", s.unit)
}

func command(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %.300s", name, err, out)
	}
	return nil
}

func agentMain(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	once := fs.Bool("once", false, "apply the egress-config there is now, then exit (the startup script's first apply)")
	dir := fs.String("dir", "/etc/egress-proxy", "where config.json and filter.nft are written")
	userName := fs.String("user", "egress-proxy", "the engine's system user, whose packets the egress filter matches")
	unit := fs.String("unit", "egress-proxy.service", "the engine's systemd unit")
	mdsURL := fs.String("metadata", agent.DefaultMetadataURL, "the metadata server's API root")
	wait := fs.Duration("wait", 60*time.Second, "timeout_sec of each wait for a change")
	boot := fs.String("boot", "", "a cloud-init boot's settings directory ("+vmconfig.BootDir+"): apply its egress-config once, and say the result in -readiness, not on a metadata server")
	readiness := fs.String("readiness", vmconfig.ReadinessFile, "with -boot, the readiness file the engine serves with its status")
	watch := fs.Bool("watch", false, "with -boot: follow the VM's user data at the URL the setting "+vmconfig.KeyWatchUserData+" names (a user data the cloud changes in place) and apply each new configuration in it in place, saying the result in -readiness (egress-watch.service)")
	follow := fs.Bool("follow", false, "with -boot: run the cloud's VM-side part the setting "+vmconfig.KeyFollow+" names, on the URL it gives, for the VM's life (a static address that needs the VM's own route), and say its outbound address in -readiness (egress-follow.service)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := logging.New(os.Stderr, slog.LevelInfo)
	if *follow {
		return followMain(log, *boot, *readiness)
	}
	u, err := user.Lookup(*userName)
	if err != nil {
		log.Error("the engine's user", slog.Any("error", err))
		return 1
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	var resolvers []netip.Addr
	if f, err := os.Open("/etc/resolv.conf"); err == nil {
		resolvers = agent.Resolvers(f)
		f.Close()
	}
	a := &agent.Agent{Metadata: &agent.Metadata{Base: *mdsURL}, Host: systemd{unit: *unit}, Dir: *dir,
		ProxyUID: uid, ConfigGID: gid, Resolvers: resolvers, Forbidden: "169.254.169.254:80",
		WatchTimeout: *wait, Log: log, IP: ipCommand}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *boot != "" {
		// A cloud-init boot's configuration is fixed at boot (a change
		// replaces the VM), except on a cloud whose user data changes in
		// place, which -watch follows.
		b := agent.Boot{Dir: *boot, Readiness: *readiness}
		// Where the boot names an instance metadata service, which
		// instance this is, for the status: a VM that cannot tell still
		// serves, and says nothing of it.
		if err := b.Identify(ctx); err != nil {
			log.Warn("the instance's identity not read", slog.Any("error", err))
		} else if b.Instance != "" {
			log.Info("instance identified", slog.String("instance", b.Instance), slog.String("zone", b.Zone))
		}
		a.Reporter = b
		// On EC2 a delegated IPv6 prefix is read from the instance
		// metadata, not found around the VM's address.
		if a.IMDS, err = b.IMDS(); err != nil {
			log.Warn("the boot's metadata service not read", slog.Any("error", err))
		}
		if *watch {
			return watchMain(ctx, log, a, b)
		}
		text, err := b.Attr(vmconfig.KeyConfig)
		if err != nil {
			log.Error("egress-config not read", slog.Any("error", err))
		}
		if err := a.Apply(ctx, text, false); err != nil {
			log.Error("egress-config not applied", slog.Any("error", err))
			return 1
		}
		return 0
	}
	if *once {
		// A value it cannot read is "": Apply refuses it and reports why.
		text, _ := a.Metadata.Attr(ctx, vmconfig.KeyConfig)
		if err := a.Apply(ctx, text, false); err != nil {
			log.Error("egress-config not applied", slog.Any("error", err))
			return 1
		}
		return 0
	}
	log.Info("following egress-config", slog.String("metadata", *mdsURL))
	// The access lines travel by the call-home, as the VM writes no log
	// of the project.
	go a.ShipAccess(ctx, vmconfig.AccessInterval)
	a.Run(ctx)
	return 0
}

// watchMain follows the VM's user data where the setting
// egress-watch-userdata says (agent.UserDataWatch) until it is stopped:
// the bootstrap starts it, as egress-watch.service, after the boot's
// apply, on a VM whose user data changes in place (Azure's). Without the
// setting it has nothing to do.
func watchMain(ctx context.Context, log *slog.Logger, a *agent.Agent, b agent.Boot) int {
	url, err := b.Attr(vmconfig.KeyWatchUserData)
	if err != nil {
		log.Error("the setting "+vmconfig.KeyWatchUserData+" not read", slog.Any("error", err))
		return 1
	}
	if url = strings.TrimSpace(url); url == "" {
		log.Info("no user data to follow (no setting " + vmconfig.KeyWatchUserData + ")")
		return 0
	}
	log.Info("following the VM's user data", slog.String("url", url))
	w := &agent.UserDataWatch{Agent: a, Boot: b, URL: url}
	w.Run(ctx)
	return 0
}

// followMain runs the VM-side part the setting egress-follow names
// (agent.FollowerOf, among cloudsvm.Followers) until it is stopped: the
// bootstrap starts it, as egress-follow.service, after the apply, on a
// Static proxy's VM of a cloud that has one (a DigitalOcean Droplet).
// Without the setting it has nothing to do. A setting naming a part this
// binary does not link exits 2, which its unit does not restart: no
// restart would link it.
func followMain(log *slog.Logger, boot, readiness string) int {
	if boot == "" {
		log.Error("-follow needs -boot")
		return 2
	}
	b := agent.Boot{Dir: boot, Readiness: readiness}
	setting, err := b.Attr(vmconfig.KeyFollow)
	if err != nil {
		log.Error("the setting "+vmconfig.KeyFollow+" not read", slog.Any("error", err))
		return 1
	}
	if strings.TrimSpace(setting) == "" {
		log.Info("no VM-side part to run (no setting " + vmconfig.KeyFollow + ")")
		return 0
	}
	f, url, err := agent.FollowerOf(cloudsvm.Followers(), setting)
	if err != nil {
		log.Error("no VM-side part to run", slog.Any("error", err))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Info("following", slog.String("part", f.Name()), slog.String("url", url))
	err = f.Follow(ctx, url, agent.FollowEnv{Report: b.Egress, Log: log,
		Client: &http.Client{Timeout: 10 * time.Second}, IP: ipCommand})
	switch {
	case errors.Is(err, agent.ErrGaveUp):
		// Nothing more to follow: the control plane replaces a VM
		// that never says what it waited for.
		log.Error("the VM-side part gave up", slog.String("part", f.Name()), slog.Any("error", err))
		return 0
	case err != nil && ctx.Err() == nil:
		log.Error("the VM-side part failed", slog.String("part", f.Name()), slog.Any("error", err))
		return 1
	}
	return 0
}

// ipCommand runs ip(8) and returns its output, or its error with what it
// printed.
func ipCommand(ctx context.Context, args ...string) ([]byte, error) {
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ip: %w: %.300s", err, stderr.String())
	}
	return out, nil
}
