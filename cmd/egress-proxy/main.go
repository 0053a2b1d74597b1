// Command egress-proxy is the forward proxy each proxy VM runs (package
// internal/vm/engine): HTTP CONNECT and plain HTTP with Basic
// credentials, and SOCKS5 when the configuration asks for it, on the
// addresses and under the rules of one JSON configuration file.
//
//	egress-proxy -config /etc/egress-proxy/engine.json
//
// SIGHUP reads the file again and applies it: the tunnels and connections
// of a user or a source it no longer allows are closed, the others keep
// going, and a file that does not load leaves the rules in force. SIGTERM
// (or SIGINT) stops accepting and lets open tunnels finish for -drain,
// then closes them. Logs are JSON lines on stderr in the shape Cloud
// Logging reads, one per decision (and, with accessLog, one "access" line
// per request), never a password or a Proxy-Authorization header. -check
// only loads the file and says whether it would serve. -readiness names
// the file a cloud-init boot's agent says its readiness in, which the
// engine serves with its status on the proxy port
// (vmconfig.StatusAccess). -traffic-state names the file the month's
// traffic is kept in across restarts, so that a restart never gives a
// proxy with a trafficQuotaBytes a fresh month (the unit's
// StateDirectory).
//
//	egress-proxy agent [-once] [-dir /etc/egress-proxy] [-user egress-proxy]
//
// runs, as root on the VM, the configuration agent (internal/vm/agent): it
// follows the instance's egress-config on the metadata server and applies
// each change to the engine running under systemd (egress-proxy.service)
// without a new VM. -once applies the value there is now and exits: the
// startup script's first apply.
//
//	egress-proxy agent -boot /etc/egress-proxy/boot [-readiness /run/egress-proxy/readiness.json] [-watch]
//
// is the agent of a cloud-init boot: it applies the
// egress-config the user-data wrote once, and says what the VM serves in
// the readiness file, which the engine (its -readiness) serves with its
// status on the proxy port, where the control plane asks. With -watch, on
// a VM whose user data changes in place (Azure's: the setting
// egress-watch-userdata), it follows that user data on the instance
// metadata service and applies each new configuration in it, as the GCE
// agent applies a change of egress-config.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/version"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(agentMain(os.Args[2:]))
	}
	configPath := flag.String("config", "", "the engine's JSON configuration (vmconfig.Config)")
	drain := flag.Duration("drain", 30*time.Second, "how long SIGTERM lets open tunnels finish before closing them")
	level := flag.String("log-level", "info", "debug (a line per refusal), info (and the access lines), warn or error")
	check := flag.Bool("check", false, "load the configuration, say whether it would serve, and exit")
	readiness := flag.String("readiness", "", "the agent's readiness file (vmconfig.Readiness), served with the status on the proxy port when the configuration has status access: a cloud-init boot's")
	trafficState := flag.String("traffic-state", "", "the file the month's traffic is kept in across restarts (for trafficQuotaBytes); empty keeps it in memory only")
	showVersion := flag.Bool("version", false, "print the version (CHANGELOG.md's release) and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("egress-proxy " + version.Version)
		os.Exit(0)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(os.Stderr, "egress-proxy: -log-level %q: want debug, info, warn or error\n", *level)
		os.Exit(2)
	}
	log := logging.New(os.Stderr, lvl)
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "egress-proxy: -config FILE is required")
		os.Exit(2)
	}
	if err := run(log, *configPath, *readiness, *trafficState, *drain, *check); err != nil {
		log.Error("egress-proxy stopped", slog.Any("error", err))
		os.Exit(1)
	}
}

func load(path string) (vmconfig.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return vmconfig.Config{}, err
	}
	c, err := engine.ReadConfig(data)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// readinessFile reads the agent's readiness file at each status request:
// a missing or unreadable one is not ready.
func readinessFile(path string) func() vmconfig.Readiness {
	if path == "" {
		return nil
	}
	return func() vmconfig.Readiness {
		var r vmconfig.Readiness
		if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &r) != nil {
			return vmconfig.Readiness{}
		}
		return r
	}
}

func run(log *slog.Logger, path, readiness, trafficState string, drain time.Duration, check bool) error {
	cfg, err := load(path)
	if err != nil {
		return err
	}
	if check {
		// Only whether it would serve: the month's file is the running
		// engine's.
		trafficState = ""
	}
	s, err := engine.New(cfg, engine.Options{Log: log, Readiness: readinessFile(readiness), TrafficState: trafficState})
	if err != nil || check {
		return err
	}
	// Subscribed before serving, so a signal sent as soon as the port
	// answers is not lost.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe() }()
	for {
		select {
		case err := <-served:
			return err
		case <-hup:
			next, err := load(path)
			if err == nil {
				err = s.Apply(next)
			}
			if err != nil {
				log.Error("reload refused: the rules in force stay", slog.Any("error", err))
			}
		case sig := <-term:
			log.Info("draining", slog.String("signal", sig.String()), slog.Duration("deadline", drain))
			ctx, cancel := context.WithTimeout(context.Background(), drain)
			err := s.Shutdown(ctx)
			cancel()
			if served := <-served; !errors.Is(served, http.ErrServerClosed) {
				return served
			}
			if errors.Is(err, context.DeadlineExceeded) {
				// Closing late tunnels is the deadline doing its job.
				return nil
			}
			return err
		}
	}
}
