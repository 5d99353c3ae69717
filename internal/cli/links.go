package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
)

// The share link verbs of `skrip files`: link, links and unlink (docs/cli.md).

func (e *env) filesLinkCmd() *cobra.Command {
	var ttl string
	var maxDownloads int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "link KEY",
		Short: "Make a share link of a file: prints a URL that downloads it without a token",
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxDownloads < 0 || (cmd.Flags().Changed("max-downloads") && maxDownloads == 0) {
				return usageErrorf(cmd, "--max-downloads must be 1 or more, got %d; leave it out for no limit", maxDownloads)
			}
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			l, err := c.CreateLink(cmd.Context(), args[0], ttl, maxDownloads)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(l)
			}
			// The URL alone on stdout, for $(skrip files link …); the rest for people.
			fmt.Fprintln(e.stdout, l.URL)
			fmt.Fprintf(e.stderr, "Link %s of %s: works until %s, %s; revoke it with `skrip files unlink %s`.\n",
				l.ID, l.FileKey, l.ExpiresAt.Local().Format("2006-01-02 15:04:05"), downloadsLeft(l), l.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the link works, e.g. 1h or 7d (at most the server's SKRIP_FILES_LINK_MAX_TTL, 7d by default, and never past the file's own expiry)")
	cmd.Flags().Int64Var(&maxDownloads, "max-downloads", 0, "downloads the link allows (a resumed download is not counted again); default no limit")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.MarkFlagRequired("ttl")
	return cmd
}

// downloadsLeft says how many downloads a link has had and may have.
func downloadsLeft(l client.FileLink) string {
	if l.MaxDownloads == nil {
		return fmt.Sprintf("%d downloads so far, no limit", l.Downloads)
	}
	return fmt.Sprintf("%d of %d downloads used", l.Downloads, *l.MaxDownloads)
}

func (e *env) filesLinksCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "links KEY",
		Short: "List a file's share links that have not expired",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			list, err := c.Links(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(list, nil)
			}
			if len(list) == 0 {
				fmt.Fprintf(e.stderr, "%s has no share links; make one with `skrip files link %s --ttl 1h`.\n", args[0], args[0])
				return nil
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tCREATED\tEXPIRES\tDOWNLOADS")
			for _, l := range list {
				max := "no limit"
				if l.MaxDownloads != nil {
					max = strconv.FormatInt(*l.MaxDownloads, 10)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d of %s\n", l.ID, humanize.Time(l.CreatedAt), l.ExpiresAt.Local().Format("2006-01-02 15:04:05"), l.Downloads, max)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) filesUnlinkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "unlink LINK_ID",
		Short: "Revoke a share link: its URL stops working at once",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			if err := c.RevokeLink(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Revoked: %s\n", args[0])
			return nil
		},
	}
}
