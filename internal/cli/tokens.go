package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/wire"
)

// tokensCmd is `skrip tokens list|create|revoke` (docs/cli.md "Tokens").
func (e *env) tokensCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tokens", Short: "List, issue and revoke API tokens"}

	var user, name, expires string
	var scope []string
	var createJSON bool
	create := &cobra.Command{
		Use:   "create [NAME]",
		Short: "Issue a new API token named NAME for yourself, or (as admin) for --user; the token is printed once",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if name != "" && name != args[0] {
					return usageErrorf(cmd, "give the token's name once: as NAME or as --name, not both")
				}
				name = args[0]
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			if user == "" {
				me, err := c.Me(cmd.Context())
				if err != nil {
					return err
				}
				user = me.ID
			}
			t, err := c.IssueToken(cmd.Context(), user, wire.NewToken{Name: name, Scope: scope, ExpiresIn: expires})
			if err != nil {
				return err
			}
			if createJSON {
				return e.printJSON(t)
			}
			fmt.Fprintln(e.stdout, t.Secret)
			exp := "never"
			if t.ExpiresAt != nil {
				exp = t.ExpiresAt.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(e.stderr, "token %s %q of %s, scope %s, expires %s (the token is shown only now; keep it safe)\n",
				t.ID, t.Name, t.User, strings.Join(t.Scope, ","), exp)
			return nil
		},
	}
	create.Flags().StringVar(&user, "user", "", "issue the token for this user, a name or an id (admins)")
	create.Flags().StringVar(&name, "name", "", "the token's name (the same as NAME)")
	create.Flags().StringSliceVar(&scope, "scope", nil, "what the token may do: all (the default), or any of files, runs, sandboxes, read, comma-separated")
	create.Flags().StringVar(&expires, "expires", "", "how long the token lasts, e.g. 720h or 30d (default: until revoked, or the server's SKRIP_TOKEN_MAX_LIFETIME)")
	create.Flags().BoolVar(&createJSON, "json", false, "print JSON (with the secret, as \"token\")")

	var listUser string
	var listAll, listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List your API tokens, or (as admin) a user's with --user or everyone's with --all; never their secrets",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listAll && listUser != "" {
				return usageErrorf(cmd, "give --user or --all, not both")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			who := listUser
			if listAll {
				who = "*"
			}
			tokens, err := c.Tokens(cmd.Context(), who)
			if err != nil {
				return err
			}
			if listJSON {
				return e.printList(tokens, nil)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tUSER\tNAME\tSCOPE\tCREATED\tEXPIRES\tLAST USED")
			for _, t := range tokens {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.User, orDash(t.Name), strings.Join(t.Scope, ","),
					t.CreatedAt.Local().Format("2006-01-02 15:04"), tokenTime(t.ExpiresAt, "never"), tokenTime(t.LastUsedAt, "never"))
			}
			return w.Flush()
		},
	}
	list.Flags().StringVar(&listUser, "user", "", "list this user's tokens, a name or an id (admins)")
	list.Flags().BoolVar(&listAll, "all", false, "list every user's tokens (admins)")
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (yours, or as admin anyone's): from then on it is refused",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, create, revoke)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tokenTime is t as the listings show it, or none when it is nil.
func tokenTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.Local().Format("2006-01-02 15:04")
}
