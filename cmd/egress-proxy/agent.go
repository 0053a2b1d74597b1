package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := logging.New(os.Stderr, slog.LevelInfo)
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
		WatchTimeout: *wait, Log: log}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *boot != "" {
		// A cloud-init boot's configuration is fixed at boot: a change
		// replaces the VM, so there is nothing to follow.
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
