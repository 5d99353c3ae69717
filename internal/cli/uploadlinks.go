package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/wire"
)

// The upload link verbs of `skrip files`: upload-link, upload-links and upload-unlink
// (docs/cli.md).

func (e *env) filesUploadLinkCmd() *cobra.Command {
	var in wire.NewUploadLink
	var maxBytes string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upload-link KEY",
		Short: "Make an upload link to a key: prints a URL where anyone who has it may upload a file there",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxBytes != "" {
				n, err := config.ParseBytes(maxBytes)
				if err != nil || n <= 0 {
					return usageErrorf(cmd, "--max-bytes %q must be a size such as 20MiB", maxBytes)
				}
				in.MaxBytes = n
			}
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			l, err := c.CreateUploadLink(cmd.Context(), args[0], in)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(l)
			}
			fmt.Fprintln(e.stdout, l.URL)
			types := "any type"
			if len(l.ContentTypes) > 0 {
				types = strings.Join(l.ContentTypes, ", ")
			}
			fmt.Fprintf(e.stderr, "Upload link %s to %s: %d upload(s) of at most %s, %s, until %s; revoke it with `skrip files upload-unlink %s`.\n",
				l.ID, l.FileKey, l.Uses, size(l.MaxBytes), types, l.ExpiresAt.Local().Format("2006-01-02 15:04:05"), l.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&in.TTL, "ttl", "", "how long the link works, e.g. 1h or 7d (at most the server's SKRIP_FILES_LINK_MAX_TTL)")
	cmd.Flags().StringVar(&maxBytes, "max-bytes", "", "largest file the link takes, e.g. 20MiB; default the server's file limit")
	cmd.Flags().StringSliceVar(&in.ContentTypes, "type", nil, "a media type the link takes, e.g. application/pdf or image/*; repeatable; default any")
	cmd.Flags().Int64Var(&in.Uses, "uses", 0, "how many uploads the link takes (each replaces the file); default 1")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.MarkFlagRequired("ttl")
	return cmd
}

func (e *env) filesUploadLinksCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upload-links",
		Short: "List your upload links that have not expired",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			list, err := c.UploadLinks(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(list, nil)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tKEY\tCREATED\tEXPIRES\tUSED")
			for _, l := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d of %d\n", l.ID, l.FileKey, humanize.Time(l.CreatedAt), l.ExpiresAt.Local().Format("2006-01-02 15:04:05"), l.Used, l.Uses)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {items, next_cursor} as JSON")
	return cmd
}

func (e *env) filesUploadUnlinkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "upload-unlink LINK_ID",
		Short: "Revoke an upload link: its URL stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			if err := c.RevokeUploadLink(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Revoked: %s\n", args[0])
			return nil
		},
	}
}
