package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// runWait is how long the editor waits for a sandbox run before showing it; the editor
// page is drawn whole, so a short run is shown done. A tool's own run page follows a run
// live (spinner, elapsed time, Avbryt), so a run started there is shown at once.
const runWait = 5 * time.Second

// sessionFiles is what the page says about a session's files.
type sessionFiles struct {
	Files   []fileEntry
	Expires time.Time
	// Reuse is what the next run does with the files when it is sent without new ones,
	// as the server decides it (workflow.countedFiles, which runForm.KeptFit follows):
	// "reused", "unfit" (they do not fit the file slot, so it gets none), "none" (the
	// tool takes no files), or "" where the page has no run form to say it of.
	Reuse string
}

// names are the names of the files.
func (s *sessionFiles) names() []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		out[i] = f.Name
	}
	return out
}

type fileEntry struct {
	Name  string
	Bytes int64
}

func (h *Handler) sessionFiles(r *http.Request, c *call, t store.Tool, sctx session.Context) (*sessionFiles, error) {
	fs, set, err := h.workflow.Files(r.Context(), t, c.User, sctx)
	if err != nil || set.SetID == "" {
		return nil, err
	}
	out := &sessionFiles{Expires: set.LastAccessedAt.Add(h.workflow.FilesTTL())}
	for _, f := range fs {
		out.Files = append(out.Files, fileEntry{f.Name, f.Bytes})
	}
	return out, nil
}

// toolView is what the tool page shows besides the tool: the run form and the settings
// panel, kept as the user sent them when the page answers a refusal.
type toolView struct {
	Version  *store.ToolVersion // the published version; nil when there is none
	Run      *runForm
	Settings *panel
}

// toolData is what the tool page shows.
func (h *Handler) toolData(r *http.Request, c *call, t store.Tool, tv toolView) (map[string]any, error) {
	page, err := h.runs.List(r.Context(), c.User, run.Query{UserID: c.User.ID, ToolID: t.ID, Limit: 10})
	if err != nil {
		return nil, err
	}
	var recent []store.Run
	for _, rn := range page.Runs {
		if rn.Context == session.Production().String() {
			recent = append(recent, rn)
		}
	}
	sf, err := h.sessionFiles(r, c, t, session.Production())
	if err != nil {
		return nil, err
	}
	data := map[string]any{"Title": t.Title, "Tool": t, "Mine": catalog.Owns(c.User, t), "Runs": recent,
		"SessionFiles": sf, "Limits": h.limits()}
	if t.UsageInstructions != "" {
		data["Usage"] = renderUsage(t.UsageInstructions)
	}
	fav, err := h.catalog.IsFavourite(r.Context(), c.User, t.ID)
	if err != nil {
		return nil, err
	}
	data["Star"] = toolCard{Tool: t, Favourite: fav, CSRF: c.CSRF, Back: "/tools/" + t.Slug, Place: "tool"}
	if tv.Version == nil {
		return data, nil
	}
	if tv.Run == nil {
		if tv.Run, err = h.toolRunForm(h.langOf(r), c, t, *tv.Version); err != nil {
			return nil, err
		}
	}
	if sf != nil {
		tv.Run.SessionFiles, tv.Run.KeptNames = len(sf.Files), sf.names()
		switch {
		case tv.Run.File == nil:
			sf.Reuse = "none"
		case tv.Run.KeptFit():
			sf.Reuse = "reused"
		default:
			sf.Reuse = "unfit"
		}
	}
	data["Run"] = tv.Run
	if tv.Settings == nil {
		if tv.Settings, err = h.toolSettings(r, c, t, *tv.Version); err != nil {
			return nil, err
		}
	}
	if tv.Settings != nil {
		data["Settings"] = tv.Settings
	}
	return data, nil
}

// toolRunForm is the tool page's run form for the published version v, in language l.
func (h *Handler) toolRunForm(l *Lang, c *call, t store.Tool, v store.ToolVersion) (*runForm, error) {
	schema, err := inputSchema(v)
	if err != nil {
		return nil, err
	}
	f := newRunForm(schema, "", l.T("tool.pick_files"), l.T("tool.blank"), h.limits())
	f.Action, f.CSRF, f.Submit = "/tools/"+t.Slug+"/runs", c.CSRF, l.T("tool.submit")
	return f, nil
}

// limits are the upload caps, for the page's courtesy check and its wording.
func (h *Handler) limits() upload.Limits { return h.runs.UploadLimits() }

func (h *Handler) toolPage(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.catalog.Visible(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	var tv toolView
	if t.PublishedVersionID != "" {
		_, v, err := h.catalog.Published(r.Context(), c.User, t.Slug)
		if err != nil {
			return err
		}
		tv.Version = &v
	}
	data, err := h.toolData(r, c, t, tv)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "tool", c, data)
	return nil
}

// submitRun reads the run form f's upload and starts an initial run of version v of t
// in context sctx, with the typed fields as the run's inputs; the form's anti-forgery
// token comes as a field of the multipart body, and nothing is kept when it is wrong.
// The workflow checks the inputs against the version's input_schema. On a refusal, f
// holds what the user sent and the server's message beside the field it names.
func (h *Handler) submitRun(r *http.Request, c *call, f *runForm, t store.Tool, v store.ToolVersion, sctx session.Context) (store.Run, error) {
	var fields map[string]string
	accept := func(form *upload.Form) error {
		if err := h.checkForm(r, c, form.Fields["csrf"]); err != nil {
			return err
		}
		fields = form.Fields
		if len(f.Fields) > 0 {
			form.Inputs = f.inputs(form.Fields)
		}
		return nil
	}
	rn, err := h.workflow.Initial(r.Context(), workflow.Initial{Tool: t, Version: v, User: c.User, Context: sctx,
		Body: r, Fields: f.textFields(), Accept: accept})
	if status, _ := httpkit.ErrorStatus(err); err != nil && shownToUser(status) {
		f.keep(fields)
		msg, ok := fileRefusal(h.langOf(r), h.limits(), err)
		if !ok {
			msg = h.message(r, err)
		}
		f.refuse(refusedField(err), msg)
	}
	return rn, err
}

func (h *Handler) startRun(w http.ResponseWriter, r *http.Request, c *call) error {
	t, v, err := h.catalog.Published(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	f, err := h.toolRunForm(h.langOf(r), c, t, v)
	if err != nil {
		return err
	}
	rn, err := h.submitRun(r, c, f, t, v, session.Production())
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) {
			return err
		}
		data, derr := h.toolData(r, c, t, toolView{Version: &v, Run: f})
		if derr != nil {
			return derr
		}
		h.render(w, r, status, "tool", c, data)
		return nil
	}
	// At once: the run page follows the run live, and a page that waited for the run
	// would look frozen to the teacher who just pressed Kör.
	redirect(w, r, "/runs/"+rn.ID)
	return nil
}

// shownToUser reports whether a refusal with status is the user's to read next to the
// form (their mistake, or the server at capacity or out of space) rather than an error
// page.
func shownToUser(status int) bool {
	return status < 500 || status == http.StatusServiceUnavailable || status == http.StatusInsufficientStorage
}

func (h *Handler) clearSessionFiles(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.catalog.Visible(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	if _, err := h.workflow.ClearFiles(r.Context(), t, c.User, session.Production()); err != nil {
		return err
	}
	redirect(w, r, "/tools/"+t.Slug)
	return nil
}

// toolSettings is the settings panel of t's published version v with the user's saved
// values, or nil when v has no settings_schema.
func (h *Handler) toolSettings(r *http.Request, c *call, t store.Tool, v store.ToolVersion) (*panel, error) {
	if v.SettingsSchema == nil {
		return nil, nil
	}
	set, err := h.catalog.Settings(r.Context(), c.User, t.Slug)
	if err != nil || set.Schema == nil {
		return nil, err
	}
	p := newSettingsPanel(set.Schema, set.Values, "", h.langOf(r).T("tool.blank"))
	p.Action, p.CSRF, p.Saved = "/tools/"+t.Slug+"/settings", c.CSRF, r.URL.Query().Get("settings") == "saved"
	return p, nil
}

// saveSettings saves the user's settings of a tool, checked against its published
// version's settings_schema. A refusal shows the tool page again with the message
// beside the field and what the user chose kept.
func (h *Handler) saveSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	t, v, err := h.catalog.Published(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	set, err := h.catalog.Settings(r.Context(), c.User, t.Slug)
	if err != nil {
		return err
	}
	_, err = h.catalog.PutSettings(r.Context(), c.User, t.Slug, settingsValues(set.Schema, r.PostForm))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) || errors.Is(err, catalog.ErrNotFound) {
			return err
		}
		p := newSettingsPanel(set.Schema, nil, "", h.langOf(r).T("tool.blank"))
		p.Action, p.CSRF = "/tools/"+t.Slug+"/settings", c.CSRF
		p.keep(r.PostForm)
		p.refuse(refusedField(err), h.message(r, err))
		data, derr := h.toolData(r, c, t, toolView{Version: &v, Settings: p})
		if derr != nil {
			return derr
		}
		h.render(w, r, status, "tool", c, data)
		return nil
	}
	redirect(w, r, "/tools/"+t.Slug+"?settings=saved#settings-h")
	return nil
}

// fileRefusal is the server's refusal of a run's files (too few, too many, a type the
// file field does not take, over an upload cap) as a sentence in l that names what to do, from the
// refusal's details; ok is false for any other refusal, whose own message stands.
func fileRefusal(l *Lang, lim upload.Limits, err error) (msg string, ok bool) {
	_, _, _, d := httpkit.Describe(err)
	if errors.Is(err, upload.ErrTooLarge) {
		return tooLarge(l, lim, d)
	}
	rule, _ := d["rule"].(string)
	switch rule {
	case contract.RuleAccept:
		file, _ := d["file"].(string)
		if file == "" {
			return "", false
		}
		return l.T("tool.upload.refused.accept", "File", file, "Types", strings.Join(stringsOf(d["accept"]), ", ")), true
	case contract.RuleNoFiles:
		return l.T("tool.upload.refused.no_files"), true
	case contract.RuleMin, contract.RuleMax:
		n, okN := d["files"].(int)
		lo, okLo := d["min"].(int)
		hi, okHi := d["max"].(int)
		if !okN || !okLo || !okHi {
			return "", false
		}
		if rule == contract.RuleMin {
			return l.T("tool.upload.refused.min", "Count", lo, "Sent", n), true
		}
		return l.T("tool.upload.refused.max", "Count", hi, "Sent", n), true
	}
	return "", false
}

// stringsOf reads a list of strings from a refusal's details.
func stringsOf(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, s := range x {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// tooLarge words an upload over a cap (upload.ErrTooLarge): a file over the cap for one
// file, the files together over the total, or too many files.
func tooLarge(l *Lang, lim upload.Limits, d map[string]any) (string, bool) {
	file, _ := d["file"].(string)
	if n, ok := d["limit_files"].(int); ok {
		return l.T("tool.upload.refused.too_many_files", "Count", n), true
	}
	limit, ok := d["limit_bytes"].(int64)
	switch {
	case !ok || file == "":
		return "", false
	case limit == lim.MaxFileBytes:
		return l.T("tool.upload.refused.file_too_big", "File", file, "Size", l.Size(limit)), true
	case limit == lim.MaxTotalBytes:
		return l.T("tool.upload.refused.total_too_big", "File", file, "Size", l.Size(limit)), true
	}
	return "", false
}
