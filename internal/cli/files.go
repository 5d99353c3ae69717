package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
)

func (e *env) filesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "files", Short: "Stage files: upload, download, list, inspect, share and delete"}
	cmd.PersistentFlags().String("owner", "", "admin: work on the files of this user (id or name) instead of your own")
	cmd.AddCommand(e.filesUploadCmd(), e.filesDownloadCmd(), e.filesListCmd(), e.filesInfoCmd(), e.filesDeleteCmd(),
		e.filesLinkCmd(), e.filesLinksCmd(), e.filesUnlinkCmd(), e.filesVersionsCmd(), e.filesUploadLinkCmd(), e.filesUploadLinksCmd(), e.filesUploadUnlinkCmd())
	return cmd
}

// filesClient is the API client for a files command: keys are a per-owner namespace, and
// --owner (admins only) addresses another user's files.
func (e *env) filesClient(cmd *cobra.Command) (*client.Client, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	if owner, _ := cmd.Flags().GetString("owner"); owner != "" {
		c = c.WithFileOwner(owner)
	}
	return c, nil
}

// isTerminal reports whether w (or r) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress returns a progress bar on stderr when stderr is a terminal, else nil.
func (e *env) progress(size int64, what string) *progressbar.ProgressBar {
	if !isTerminal(e.stderr) {
		return nil
	}
	return newProgress(e.stderr, size, what)
}

// progressEvery is how often the bar is drawn again, and so the shortest time over which
// it measures its first rate.
const progressEvery = 100 * time.Millisecond

// newProgress is a progress bar of size bytes on w. It is drawn empty when made, which
// starts its clock: otherwise the clock starts at the first bytes, and the first frame
// shows their count over a few microseconds ("65 GB/s"). Frames are at least
// progressEvery apart, so the first rate is measured over that long at least.
func newProgress(w io.Writer, size int64, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(size, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(progressEvery),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }), progressbar.OptionClearOnFinish())
}

func size(n int64) string {
	if n < 0 {
		return "?"
	}
	return humanize.Bytes(uint64(n))
}

func (e *env) filesUploadCmd() *cobra.Command {
	var opts client.UploadOptions
	var asJSON, noResume bool
	var threshold, ifMatch, ifNoneMatch string
	cmd := &cobra.Command{
		Use:   "upload PATH",
		Short: "Upload a file (- for standard input); prints its key",
		Long: "Uploads a file to the staging area. A file of --resumable-threshold or more goes up resumably:\n" +
			"if the connection drops or the command is interrupted, running the same command again goes on\n" +
			"from where the server stopped (a small state file under the user's cache directory, or\n" +
			"$SKRIP_CACHE_DIR, remembers the upload until it completes). --no-resume sends the file in one\n" +
			"request and keeps no state.",
		RunE: func(cmd *cobra.Command, args []string) error {
			minSize, err := config.ParseBytes(threshold)
			if err != nil {
				return usageErrorf(cmd, "--resumable-threshold %q: %v", threshold, err)
			}
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			opts.IfMatch, opts.IfNoneMatch = etagArg(ifMatch), etagArg(ifNoneMatch)
			if args[0] == "-" {
				// Standard input: its length is not known, so it goes in one request
				// (the server's file size limit ends one too long), named after its key.
				name := "stdin"
				if opts.Key != "" {
					name = path.Base(opts.Key)
				}
				fi, err := c.Upload(cmd.Context(), name, e.stdin, opts)
				if err != nil {
					return err
				}
				return e.printUploaded(fi, asJSON)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			if st.IsDir() {
				return fmt.Errorf("%s is a directory; upload files one at a time", args[0])
			}
			var fi client.FileInfo
			owner, _ := cmd.Flags().GetString("owner")
			// A condition is judged when the file is made, so it goes in one request
			// (a resumable upload takes none: docs/api.md "Conditional writes").
			conditional := opts.IfMatch != "" || opts.IfNoneMatch != ""
			resumable := !noResume && !conditional && owner == "" && st.Mode().IsRegular() && st.Size() >= minSize
			if resumable {
				fi, err = e.uploadResumable(cmd.Context(), c, f, args[0], st, opts)
				if errors.Is(err, client.ErrResumableUnsupported) {
					resumable = false // an older server: one request, as before
				}
			}
			if !resumable {
				fi, err = e.uploadOnce(cmd.Context(), c, f, args[0], st.Size(), opts)
			}
			if err != nil {
				return err
			}
			return e.printUploaded(fi, asJSON)
		},
	}
	cmd.Flags().StringVar(&opts.Key, "key", "", "store under this key (must start with files/); default files/f_<ULID>")
	cmd.Flags().StringVar(&opts.TTL, "ttl", "", "delete the file after this long, e.g. 90m or 7d")
	cmd.Flags().StringVar(&opts.ContentType, "content-type", "", "media type; default guessed from the name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&threshold, "resumable-threshold", "8MiB", "upload files of this size or more resumably (e.g. 8MiB, 0 for every file)")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "send the file in one request and keep no state to resume from")
	cmd.Flags().StringVar(&ifMatch, "if-match", "", "replace the file under --key only if it is this version: its checksum (sha256:…, as files info shows) or ETag; * for any file")
	cmd.Flags().StringVar(&ifNoneMatch, "if-none-match", "", "* to store only if no file is under --key (create only); or an ETag the file must not have")
	return cmd
}

func (e *env) printUploaded(fi client.FileInfo, asJSON bool) error {
	if asJSON {
		return e.printJSON(fi)
	}
	fmt.Fprintf(e.stdout, "Uploaded: %s (%s)\n", fi.FileKey, size(fi.SizeBytes))
	return nil
}

// etagArg is an ETag as given on the command line, as a header value: quoted, unless it
// is "*", a list, or quoted already.
func etagArg(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || v == "*" || strings.ContainsAny(v, `",`) {
		return v
	}
	return `"` + strings.TrimPrefix(v, "sha256:") + `"`
}

// uploadOnce sends the file in one multipart request, with a progress bar on a terminal.
func (e *env) uploadOnce(ctx context.Context, c *client.Client, f *os.File, path string, n int64, opts client.UploadOptions) (client.FileInfo, error) {
	var body io.Reader = f
	if bar := e.progress(n, "uploading"); bar != nil {
		r := progressbar.NewReader(f, bar)
		body = &r
		defer bar.Finish()
	}
	return c.Upload(ctx, filepath.Base(path), body, opts)
}

func (e *env) filesDownloadCmd() *cobra.Command {
	var out, version string
	var force bool
	cmd := &cobra.Command{
		Use:   "download KEY",
		Short: "Download a file and verify its checksum (-o - writes to standard output)",
		Long: "Downloads a file, verifies its checksum, and only then puts it in place: a failed download\n" +
			"leaves nothing behind. An existing local file is kept unless --force.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			if out == "-" {
				_, err := c.DownloadVersion(cmd.Context(), args[0], version, func(client.FileInfo) (io.Writer, error) { return e.stdout, nil })
				return err
			}
			return e.downloadToFile(cmd, c, args[0], version, out, force)
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "a previous version's id, from `skrip files versions KEY`; default the current one")
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write: a path, a directory, or - for standard output; default the file's name")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "overwrite a local file of the same name")
	return cmd
}

// errExists refuses to replace the local file target without --force.
func errExists(target string) error {
	return fmt.Errorf("%s already exists; pass --force to overwrite it, or -o to choose another name", target)
}

// downloadToFile writes to a temp file beside the target and moves it into place only
// when the checksum matched, so a failed download never leaves a partial file. Without
// force it refuses a target that exists before the download starts, and moves the file
// in only if none appeared meanwhile.
func (e *env) downloadToFile(cmd *cobra.Command, c *client.Client, key, version, out string, force bool) error {
	var tmp *os.File
	var target string
	var bar *progressbar.ProgressBar
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	fi, err := c.DownloadVersion(cmd.Context(), key, version, func(fi client.FileInfo) (io.Writer, error) {
		target = out
		name := filepath.Base(fi.Name)
		if name == "." || name == "/" || name == "" {
			name = filepath.Base(fi.FileKey)
		}
		if target == "" {
			target = name
		} else if st, err := os.Stat(target); err == nil && st.IsDir() {
			target = filepath.Join(target, name)
		}
		if _, err := os.Lstat(target); err == nil && !force {
			return nil, errExists(target)
		}
		var err error
		tmp, err = os.CreateTemp(filepath.Dir(target), ".skrip-download-*")
		if err != nil {
			// Name the file the user asked for, not the temporary one beside it.
			return nil, fmt.Errorf("cannot write %s: %w", target, errors.Unwrap(err))
		}
		if bar = e.progress(fi.SizeBytes, "downloading"); bar != nil {
			return io.MultiWriter(tmp, bar), nil
		}
		return tmp, nil
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := place(tmp.Name(), target, force); err != nil {
		return err
	}
	tmp = nil
	fmt.Fprintf(e.stderr, "Downloaded: %s (%s, %s verified)\n", target, size(fi.SizeBytes), fi.Checksum)
	return nil
}

// place moves the finished file tmp to target atomically: a rename, or, without force, a
// hard link, which fails if target exists, so a file that appeared during the download is
// not replaced either.
func place(tmp, target string, force bool) error {
	if force {
		return os.Rename(tmp, target)
	}
	err := os.Link(tmp, target)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return errExists(target)
	}
	// A file system without hard links (some network and FUSE ones): check, then rename.
	if _, err := os.Lstat(target); err == nil {
		return errExists(target)
	}
	return os.Rename(tmp, target)
}

func (e *env) filesListCmd() *cobra.Command {
	var prefix string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your files (or, for an admin, another user's with --owner)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			var all []client.FileInfo
			cursor := ""
			for {
				page, next, err := c.Files(cmd.Context(), prefix, cursor, 1000)
				if err != nil {
					return err
				}
				all = append(all, page...)
				if next == "" {
					break
				}
				cursor = next
			}
			if asJSON {
				return e.printList(all, nil)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tSIZE\tNAME\tCREATED\tEXPIRES")
			for _, f := range all {
				exp := "never"
				if f.ExpiresAt != nil {
					exp = humanize.Time(*f.ExpiresAt)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f.FileKey, size(f.SizeBytes), f.Name, humanize.Time(f.CreatedAt), exp)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only keys starting with this, e.g. files/reports/")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) filesInfoCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info KEY",
		Short: "Show a file's size, type, checksum and expiry",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			fi, err := c.FileInfoOf(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(fi)
			}
			exp := "never"
			if fi.ExpiresAt != nil {
				exp = fi.ExpiresAt.Local().Format("2006-01-02 15:04:05") + " (" + humanize.Time(*fi.ExpiresAt) + ")"
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintf(w, "key\t%s\nname\t%s\nsize\t%s (%d bytes)\ntype\t%s\nchecksum\t%s\ncreated\t%s\nexpires\t%s\n",
				fi.FileKey, fi.Name, size(fi.SizeBytes), fi.SizeBytes, fi.ContentType, fi.Checksum,
				fi.CreatedAt.Local().Format("2006-01-02 15:04:05"), exp)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) filesDeleteCmd() *cobra.Command {
	var force bool
	var ifMatch string
	cmd := &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a file (asks first on a terminal, unless --force)",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			if !force && isTerminal(e.stdin) {
				fi, err := c.FileInfoOf(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "Delete %s (%s, %s)? [y/N] ", fi.FileKey, fi.Name, size(fi.SizeBytes))
				answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					return errors.New("not deleted")
				}
			}
			if err := c.DeleteFileIf(cmd.Context(), args[0], etagArg(ifMatch)); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Deleted: %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	cmd.Flags().StringVar(&ifMatch, "if-match", "", "delete only if the file is this version: its checksum (sha256:…, as files info shows) or ETag")
	return cmd
}

func (e *env) cleanupCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Run one janitor pass on the server now and print what it removed (admin)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			r, err := c.Cleanup(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(r)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "removed")
			fmt.Fprintf(w, "  expired files\t%d\t%s\n", r.Files, size(r.FileBytes))
			fmt.Fprintf(w, "  replaced file versions\t%d\tkept a while for readers that had them open\n", r.FileVersions)
			fmt.Fprintf(w, "  file versions trimmed\t%d\tkept versions beyond SKRIP_FILES_VERSIONS, retired\n", r.FileVersionsTrimmed)
			fmt.Fprintf(w, "  expired share links\t%d\t\n", r.FileLinks)
			fmt.Fprintf(w, "  unfinished resumable uploads\t%d\t%s received\n", r.Uploads, size(r.UploadBytes))
			fmt.Fprintf(w, "  expired session file sets\t%d\t%d files, %s\n", r.SessionSets, r.SessionFiles, size(r.SessionBytes))
			fmt.Fprintf(w, "  expired run artifacts\t%d\tof %d runs, %s\n", r.Artifacts, r.ArtifactRuns, size(r.ArtifactBytes))
			fmt.Fprintf(w, "  orphan session files\t%d\tno session set refers to them\n", r.OrphanSessionFiles)
			fmt.Fprintf(w, "  orphan run artifacts\t%d\tno run refers to them\n", r.OrphanArtifacts)
			fmt.Fprintf(w, "  blob store leftovers\t%d\ttemp files and unreferenced objects or chunks of interrupted uploads\n", r.BlobLeftovers)
			fmt.Fprintf(w, "  expired sign-ins\t%d\t\n", r.SignIns)
			fmt.Fprintf(w, "  idle sandboxes\t%d\t\n", r.Sandboxes)
			fmt.Fprintf(w, "  old audit events\t%d\tpast SKRIP_AUDIT_RETENTION\n", r.AuditEvents)
			fmt.Fprintf(w, "  stale invitations\t%d\texpired over a day ago\n", r.Invitations)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
