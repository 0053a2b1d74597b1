// Command with-emulators runs a command with Google's Firestore and Pub/Sub
// emulators started on free loopback ports, FIRESTORE_EMULATOR_HOST and
// PUBSUB_EMULATOR_HOST set for it, and both emulators stopped when it ends.
// `make test` uses it so that the emulators start once per test run, not once
// per test binary.
//
//	go run ./dev/with-emulators -- go test ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/egress-proxies/egress/emulators/emulator"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: with-emulators -- COMMAND [ARG…]")
		os.Exit(2)
	}
	os.Exit(run(args))
}

func run(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var procs []*emulator.Process
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	for _, kind := range []emulator.Kind{emulator.Firestore, emulator.PubSub} {
		p, err := emulator.Start(ctx, kind, emulator.Options{Host: os.Getenv(kind.EnvVar())})
		if err != nil {
			log.Error("emulator failed to start", "emulator", kind, "err", err)
			return 1
		}
		procs = append(procs, p)
		os.Setenv(kind.EnvVar(), p.Host)
		log.Info("emulator ready", "emulator", kind, kind.EnvVar(), p.Host)
	}

	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		log.Error("command failed", "command", args[0], "err", err)
		return 1
	}
}
