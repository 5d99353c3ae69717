package cli

import (
	"bufio"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func (e *env) usersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Manage users (needs an admin token)"}

	var role string
	var passwordStdin, asJSON bool
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Create a user and print its first API token",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			var password string
			if passwordStdin {
				if password, err = e.readPassword(); err != nil {
					return err
				}
			}
			u, err := c.CreateUser(cmd.Context(), args[0], role, password)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(u)
			}
			fmt.Fprintf(e.stdout, "created %s %q (%s)\ntoken: %s\n(the token is shown only now; keep it safe)\n", u.Role, u.Name, u.ID, u.Token)
			return nil
		},
	}
	add.Flags().StringVar(&role, "role", "user", "admin, reviewer, author or user")
	add.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read a password for web sign-in from standard input")
	add.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List users",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			users, err := c.Users(cmd.Context())
			if err != nil {
				return err
			}
			if listJSON {
				return e.printList(users, nil)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tROLE\tPASSWORD\tID\tCREATED")
			for _, u := range users {
				pw := "no"
				if u.HasPassword {
					pw = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, pw, u.ID, u.CreatedAt.Local().Format("2006-01-02 15:04"))
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	setRole := &cobra.Command{
		Use:   "set-role USER ROLE",
		Short: "Change a user's role: admin, reviewer, author or user (USER is a name or an id)",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			u, err := c.SetRole(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s is now %s\n", u.Name, u.Role)
			return nil
		},
	}
	setPassword := &cobra.Command{
		Use:   "set-password USER --password-stdin",
		Short: "Set the password a user signs in to the web UI with (admin, or yourself); it signs them out elsewhere",
		RunE: func(cmd *cobra.Command, args []string) error {
			if !passwordStdin {
				return usageErrorf(cmd, "give the password on standard input with --password-stdin, so it stays out of the shell history")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			password, err := e.readPassword()
			if err != nil {
				return err
			}
			if err := c.SetPassword(cmd.Context(), args[0], password); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "password of %s set\n", args[0])
			return nil
		},
	}
	setPassword.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
	cmd.AddCommand(add, list, setRole, setPassword)
	cmd.AddCommand(e.lifecycleCmds()...)
	return cmd
}

// readPassword reads one line from standard input, for --password-stdin.
func (e *env) readPassword() (string, error) {
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("--password-stdin: no password on standard input")
	}
	return strings.TrimRight(line, "\r\n"), nil
}
