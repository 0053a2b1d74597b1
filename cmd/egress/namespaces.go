package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/spf13/cobra"
)

func (c *cli) namespacesCommand() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:     "namespaces",
		Aliases: []string{"namespace", "ns"},
		Short:   "Namespaces and their members: viewer, editor or owner",
	})
	cmd.AddCommand(c.nsListCommand(), c.nsGetCommand(), c.nsCreateCommand(), c.nsAddMemberCommand(), c.nsRemoveMemberCommand(), c.nsSetQuotaCommand(), c.nsDeleteCommand())
	return cmd
}

func (c *cli) nsListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the namespaces you are a member of (every one, for a platform admin)",
		Args:    names(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := c.client.AllNamespaces(cmd.Context())
			if err != nil {
				return err
			}
			return c.printNamespaces(list)
		},
	}
}

// onNamespace is a command that changes or reads one namespace and shows
// it as the API answered.
func (c *cli) onNamespace(use, short string, args int, call func(ctx context.Context, args []string) (*client.Namespace, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  names(args),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := call(cmd.Context(), args)
			if err != nil {
				return err
			}
			return c.printNamespace(n)
		},
	}
}

func (c *cli) nsGetCommand() *cobra.Command {
	return c.onNamespace("get NAMESPACE", "Show a namespace: its members, quota and proxy count", 1,
		func(ctx context.Context, args []string) (*client.Namespace, error) {
			return c.client.GetNamespace(ctx, args[0])
		})
}

func (c *cli) nsCreateCommand() *cobra.Command {
	var (
		members []string
		quota   int
	)
	cmd := &cobra.Command{
		Use:     "create NAMESPACE [--member EMAIL=ROLE…] [--quota N]",
		Short:   "Make a namespace (platform admins)",
		Example: `  egress namespaces create payments --member alice@example.com=owner --member ci@proj.iam.gserviceaccount.com=editor`,
		Args:    names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m := map[string]string{}
			for _, kv := range members {
				email, role, ok := strings.Cut(kv, "=")
				if !ok || email == "" || role == "" {
					return usageError{fmt.Errorf("--member %q: want EMAIL=ROLE, ROLE one of viewer, editor, owner", kv)}
				}
				m[email] = role
			}
			var q *int
			if cmd.Flags().Changed("quota") {
				q = &quota
			}
			n, created, err := c.client.CreateNamespace(cmd.Context(), args[0], m, q)
			if err != nil {
				return err
			}
			if !created {
				fmt.Fprintf(c.stderr, "namespace %s exists already with these settings\n", args[0])
			}
			return c.printNamespace(n)
		},
	}
	cmd.Flags().StringArrayVar(&members, "member", nil, "EMAIL=ROLE, ROLE one of viewer, editor, owner; repeat")
	cmd.Flags().IntVar(&quota, "quota", 0, "how many proxies it may hold (default: the deployment's)")
	return cmd
}

func (c *cli) nsAddMemberCommand() *cobra.Command {
	var role string
	cmd := c.onNamespace("add-member NAMESPACE EMAIL --role viewer|editor|owner", "Give someone a role in a namespace, or change theirs (owners)", 2,
		func(ctx context.Context, args []string) (*client.Namespace, error) {
			return c.client.UpdateNamespace(ctx, args[0], map[string]*string{args[1]: &role}, nil)
		})
	cmd.Flags().StringVar(&role, "role", "", "viewer, editor or owner (required)")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"viewer", "editor", "owner"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) nsRemoveMemberCommand() *cobra.Command {
	return c.onNamespace("remove-member NAMESPACE EMAIL", "Take someone's role in a namespace away (owners)", 2,
		func(ctx context.Context, args []string) (*client.Namespace, error) {
			return c.client.UpdateNamespace(ctx, args[0], map[string]*string{args[1]: nil}, nil)
		})
}

func (c *cli) nsSetQuotaCommand() *cobra.Command {
	return c.onNamespace("set-quota NAMESPACE N", "Change how many proxies a namespace may hold (platform admins)", 2,
		func(ctx context.Context, args []string) (*client.Namespace, error) {
			q, err := strconv.Atoi(args[1])
			if err != nil {
				return nil, usageError{fmt.Errorf("quota %q: want a whole number", args[1])}
			}
			return c.client.UpdateNamespace(ctx, args[0], nil, &q)
		})
}

func (c *cli) nsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAMESPACE",
		Short: "Delete an empty namespace (platform admins)",
		Args:  names(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.client.DeleteNamespace(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "namespace %s deleted\n", args[0])
			return nil
		},
	}
}
