// Command egress is the product's CLI: proxies and namespaces from a
// terminal or from CI, over the API, as gcloud and kubectl users expect
// (`egress proxies create NAME --namespace NS --region R
// --allowed-source-range CIDR --wait`). Its flags are the API's field
// names (aliases.go). `go install github.com/egress-proxies/egress/cmd/egress` or
// `make cli` builds it.
//
// Exit codes: 0 done; 1 the API or the network failed, or a wait ended on
// a Failed proxy or its timeout; 2 the request was invalid — a flag or
// argument, or the API's 400, whose field violations are printed one per
// line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/egress-proxies/egress/internal/client"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitInvalid = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run runs one command line and returns its exit code; getenv reads the
// environment (EGRESS_API, EGRESS_TOKEN, EGRESS_NAMESPACE).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cli := &cli{stdout: stdout, stderr: stderr, getenv: getenv}
	root := cli.command()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if !cli.started {
		// Cobra refused the command line before any command ran: an
		// unknown command or flag, or a wrong number of arguments.
		err = usageError{err}
	}
	return report(stderr, err)
}

// cli is one run's settings and streams.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	api, token, output string
	// started is set once a command runs, past cobra's own checks.
	started bool
	client  *client.Client
}

func (c *cli) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "egress",
		Short: "Egress proxies on demand",
		Long: `egress asks for egress proxies and manages who may: each proxy is a VM with
an IP of its own, serving an authenticated HTTP proxy to the source ranges
you allow.

The API is --api, or EGRESS_API, or the local stack at http://localhost:8080.
Against a deployment the CLI sends an ID token for the API from Application
Default Credentials (a service account), or --token / EGRESS_TOKEN, such as
"$(gcloud auth print-identity-token)"; the local stack needs none.

Exit codes: 0 done; 1 the API or the network failed, or a wait ended on a
Failed proxy or its timeout; 2 the request was invalid (a flag, or the API's
400 with its field violations).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			c.started = true
			// Cobra checks required flags only after this hook: check
			// them first, so a missing one is the usage error it is.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return usageError{err}
			}
			if c.output != "table" && c.output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", c.output)}
			}
			if cmd.Annotations[offline] != "" {
				return nil
			}
			hc, err := httpClient(cmd.Context(), c.api, c.token)
			if err != nil {
				return err
			}
			c.client, err = client.New(c.api, hc)
			return err
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	flags := root.PersistentFlags()
	flags.StringVar(&c.api, "api", envOr(c.getenv, "EGRESS_API", "http://localhost:8080"), "the API's URL (EGRESS_API)")
	flags.StringVar(&c.token, "token", c.getenv("EGRESS_TOKEN"), "an ID token for the API, instead of Application Default Credentials (EGRESS_TOKEN)")
	flags.StringVarP(&c.output, "output", "o", "table", "output format: table or json")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(c.proxiesCommand(), c.namespacesCommand(), c.poolsCommand(), c.versionCommand(), c.docsCommand())
	// Cobra's own completion command needs no API.
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" || sub.Name() == "help" {
			markOffline(sub)
		}
	}
	return root
}

// group is a command that only holds others: with an argument it is a
// command that does not exist, which cobra would answer with the help and
// exit status 0.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.Annotations = map[string]string{offline: "true"}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
		}
		return cmd.Help()
	}
	return cmd
}

// offline marks the commands that need no API client.
const offline = "offline"

func markOffline(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[offline] = "true"
	for _, sub := range cmd.Commands() {
		markOffline(sub)
	}
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// usageError is a command line the CLI refuses: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// report prints err for a person and returns its exit code: an API error
// with its status, reason and each field violation on a line of its own.
func report(w io.Writer, err error) int {
	var (
		apiErr *client.Error
		usage  usageError
	)
	switch {
	case errors.As(err, &apiErr):
		if len(apiErr.FieldViolations) > 0 {
			fmt.Fprintf(w, "egress: the API refused the request (%d %s):\n", apiErr.Code, apiErr.Status)
			for _, v := range apiErr.FieldViolations {
				fmt.Fprintf(w, "  %s: %s\n", v.Field, v.Description)
			}
		} else {
			fmt.Fprintf(w, "egress: %s (%d %s%s)\n", apiErr.Message, apiErr.Code, apiErr.Status, reasonSuffix(apiErr.Reason))
		}
		if apiErr.RetryDelay > 0 {
			fmt.Fprintf(w, "egress: the same request is taken in %s\n", apiErr.RetryDelay)
		}
		if apiErr.Code == http.StatusBadRequest {
			return exitInvalid
		}
		return exitFailed
	case errors.As(err, &usage):
		fmt.Fprintf(w, "egress: %v\nRun 'egress --help' for usage.\n", err)
		return exitInvalid
	}
	fmt.Fprintf(w, "egress: %v\n", err)
	return exitFailed
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ", " + reason
}
