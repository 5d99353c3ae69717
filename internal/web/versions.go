package web

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/textdiff"
)

// The editor's versions (docs/web-ui.md "Versions"): the list beside the source, two
// versions compared side by side, and an old version restored as a new one.

// versionsView is what part_versions.html shows of a tool's versions in the editor.
type versionsView struct {
	List []store.VersionSummary // newest first
	// Current is the version the editor shows; Against is the one the compare form
	// picks to compare it with by default: the one before it.
	Current, Against string
	Published        string
	Slug             string
	CSRF             string
	// Restored is set just after a restore: the number restored from (0: none).
	Restored int
}

// versionsPanel lists t's versions for the editor showing version v.
func (h *Handler) versionsPanel(r *http.Request, c *call, t store.Tool, v store.ToolVersion) (*versionsView, error) {
	_, list, err := h.catalog.VersionList(r.Context(), c.User, t.ID)
	if err != nil {
		return nil, err
	}
	vv := &versionsView{List: list, Current: v.ID, Published: t.PublishedVersionID, Slug: t.Slug, CSRF: c.CSRF}
	if n, err := strconv.Atoi(r.URL.Query().Get("restored")); err == nil && n > 0 {
		vv.Restored = n
	}
	for i, s := range list {
		if s.ID == v.ID && i+1 < len(list) {
			vv.Against = list[i+1].ID
		}
	}
	if vv.Against == "" && len(list) > 1 && list[0].ID != v.ID {
		vv.Against = list[0].ID
	}
	return vv, nil
}

// compareVersions takes the compare form of the versions list to the diff page of the
// two versions picked.
func (h *Handler) compareVersions(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	q := r.URL.Query()
	version, against := q.Get("version"), q.Get("against")
	if version == "" || against == "" {
		redirect(w, r, "/editor/"+url.PathEscape(r.PathValue("tool")))
		return nil
	}
	redirect(w, r, "/editor/versions/"+url.PathEscape(version)+"/diff?against="+url.QueryEscape(against))
	return nil
}

// diffRow is one row of a side-by-side diff: a line of the older version (left) beside
// one of the newer (right). A number of 0 leaves that side empty; Gap stands for
// unchanged lines not shown.
type diffRow struct {
	Gap              bool
	OldNum, NewNum   int
	OldText, NewText string
	OldKind, NewKind string // "", "del", "ins"
}

// diffPartView is one part (source, a schema) of two versions side by side.
type diffPartView struct {
	Name    string
	Changed bool
	Rows    []diffRow
}

// sideBySide sets the hunks of lines side by side: each change's removed lines beside
// its added ones, with unchanged lines around them, and a gap where unchanged lines are
// left out (before, between and after the hunks).
func sideBySide(lines []textdiff.Line) []diffRow {
	var rows []diffRow
	hunks := textdiff.Hunks(lines, catalog.DiffContext)
	for _, hk := range hunks {
		first := hk.Lines[0]
		if first.Old > 1 || first.New > 1 {
			rows = append(rows, diffRow{Gap: true})
		}
		ls := hk.Lines
		for j := 0; j < len(ls); {
			if ls[j].Kind == textdiff.Equal {
				rows = append(rows, diffRow{OldNum: ls[j].Old, NewNum: ls[j].New, OldText: ls[j].Text, NewText: ls[j].Text})
				j++
				continue
			}
			var del, ins []textdiff.Line
			for ; j < len(ls) && ls[j].Kind == textdiff.Delete; j++ {
				del = append(del, ls[j])
			}
			for ; j < len(ls) && ls[j].Kind == textdiff.Insert; j++ {
				ins = append(ins, ls[j])
			}
			for k := range max(len(del), len(ins)) {
				var row diffRow
				if k < len(del) {
					row.OldNum, row.OldText, row.OldKind = del[k].Old, del[k].Text, "del"
				}
				if k < len(ins) {
					row.NewNum, row.NewText, row.NewKind = ins[k].New, ins[k].Text, "ins"
				}
				rows = append(rows, row)
			}
		}
	}
	if len(hunks) > 0 {
		last := hunks[len(hunks)-1].Lines
		if end := last[len(last)-1]; end != lines[len(lines)-1] {
			rows = append(rows, diffRow{Gap: true})
		}
	}
	return rows
}

// versionDiff shows two versions of a tool side by side: what changed from ?against=
// (left) to the version of the path (right), in the source and in each schema.
func (h *Handler) versionDiff(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	d, err := h.catalog.Diff(r.Context(), c.User, r.PathValue("version"), r.URL.Query().Get("against"))
	if err != nil {
		return err
	}
	// A reviewer reads the versions of a review without maintaining the tool.
	_, t, err := h.catalog.ReadableVersion(r.Context(), c.User, d.To.ID)
	if err != nil {
		return err
	}
	var parts []diffPartView
	for _, p := range d.Parts {
		parts = append(parts, diffPartView{Name: p.Name, Changed: p.Changed, Rows: sideBySide(p.Lines)})
	}
	l := h.langOf(r)
	h.render(w, r, http.StatusOK, "versions_diff", c, map[string]any{
		"Title": l.T("versions.diff.title", "Tool", t.Title, "New", d.To.Number, "Old", d.From.Number),
		"Tool":  t, "From": d.From, "To": d.To, "Sides": []store.ToolVersion{d.From, d.To}, "Parts": parts, "Published": t.PublishedVersionID,
	})
	return nil
}

// restoreVersion makes a new version of a tool from an old one and opens it.
func (h *Handler) restoreVersion(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	old, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	v, err := h.catalog.Restore(r.Context(), c.User, old.ID)
	if err != nil {
		return err
	}
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&restored="+strconv.Itoa(old.Number))
	return nil
}
