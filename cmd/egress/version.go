package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/egress-proxies/egress/internal/version"
)

// versionCommand prints the CLI's release, the one CHANGELOG.md lists
// newest for this source. It asks the API nothing: a deployment's own
// release is the Egress-Version header of each of its answers.
func (c *cli) versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version",
		Long: `Print the CLI's version, as CHANGELOG.md names its releases. A
deployment says its own in the Egress-Version header of every answer
(curl -sI "$EGRESS_API/healthz").`,
		Args: names(0),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(c.stdout, "egress %s\n", version.Version)
			return err
		},
	}
	markOffline(cmd)
	return cmd
}
