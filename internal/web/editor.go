package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// starterSource is what a new tool's editor starts with: a tool that works as it is
// (it lists the files it was given), in Swedish as the tools' users read them and
// with the hub's toolkit, so an author sees where inputs, files and errors go.
const starterSource = `from skriptoteket_toolkit import list_input_files
from tool_errors import ToolUserError


def run_tool(input_dir, output_dir):
    """Körs varje gång någon kör verktyget.

    Filerna som användaren laddade upp finns i input_dir. Fälten i
    formuläret (indataschemat) läser du med read_inputs() från
    skriptoteket_toolkit. Filer som du sparar i output_dir kan användaren
    ladda ner efteråt.
    """
    filer = [f["name"] for f in list_input_files()]
    if not filer:
        # Ett ToolUserError visas för användaren som ett meddelande, utan felspårning.
        raise ToolUserError("Ladda upp minst en fil.")
    return {"outputs": [{"kind": "notice", "level": "info",
                         "message": "Du laddade upp: " + ", ".join(filer)}]}
`

// DefaultCodeMirrorDir is where Debian's libjs-codemirror installs CodeMirror 5: the
// editor serves it from there, as Debian packages web applications, and ships no copy.
const DefaultCodeMirrorDir = "/usr/share/javascript/codemirror"

// openCodeMirror opens CodeMirror's directory, or returns nil when it is not there.
func openCodeMirror(dir string, log *slog.Logger) *os.Root {
	if dir == "" {
		dir = DefaultCodeMirrorDir
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if log != nil {
			log.Info("CodeMirror is not installed; the editor uses a plain text box", "dir", dir, "install", "apt-get install libjs-codemirror")
		}
		return nil
	}
	return root
}

// hasCodeMirror reports whether the editor can load CodeMirror.
func (h *Handler) hasCodeMirror() bool {
	if h.codeMirror == nil {
		return false
	}
	_, err := h.codeMirror.Stat("lib/codemirror.js")
	return err == nil
}

// serveCodeMirror serves CodeMirror's scripts and style sheets from its installed
// directory. os.Root keeps every name inside it (no "..", no symlink out of it), and only
// regular .js and .css files are served, never a listing.
func (h *Handler) serveCodeMirror(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/static/vendor/codemirror/")
	ext := path.Ext(name)
	if h.codeMirror == nil || !fs.ValidPath(name) || (ext != ".js" && ext != ".css") {
		h.NotFound().ServeHTTP(w, r)
		return
	}
	f, err := h.codeMirror.Open(name)
	if err != nil {
		h.NotFound().ServeHTTP(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		h.NotFound().ServeHTTP(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeContent(w, r, name, info.ModTime(), f)
}

func needAuthor(c *call) error { return workflow.NeedAuthor(c.User) }

func (h *Handler) editorIndex(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	return h.showEditorIndex(w, r, c, http.StatusOK, nil, catalog.NewTool{}, &versionForm{Source: starterSource})
}

// showEditorIndex shows the author's tools and the new-tool form: n's title, slug and
// description, and f's code and schemas, as sent when the server refused them.
func (h *Handler) showEditorIndex(w http.ResponseWriter, r *http.Request, c *call, status int, cause error, n catalog.NewTool, f *versionForm) error {
	tools, err := h.catalog.List(r.Context(), c.User)
	if err != nil {
		return err
	}
	var mine []store.Tool
	for _, t := range tools {
		if catalog.Owns(c.User, t) {
			mine = append(mine, t)
		}
	}
	f.MaxFiles = h.limits().MaxFiles
	data := map[string]any{"Title": h.langOf(r).T("editor.index.title"), "Tools": mine, "New": n, "Form": f, "CodeMirror": h.hasCodeMirror()}
	if cause != nil {
		// A refusal of the source or of a schema shows beside its box; any other
		// (the slug taken, the title too long) above the button.
		switch field := refusedField(cause); field {
		case "source", "input_schema", "settings_schema":
			f.refuse(field, h.message(r, cause))
		default:
			data["Error"] = h.message(r, cause)
		}
	}
	h.render(w, r, status, "editor_index", c, data)
	return nil
}

func (h *Handler) createTool(w http.ResponseWriter, r *http.Request, c *call) error {
	f := &versionForm{Source: r.PostFormValue("source"), InputSchema: r.PostFormValue("input_schema"), SettingsSchema: r.PostFormValue("settings_schema")}
	n := catalog.NewTool{Slug: r.PostFormValue("slug"), Title: r.PostFormValue("title"), Description: r.PostFormValue("description"),
		Source: f.Source, InputSchema: schemaText(f.InputSchema), SettingsSchema: schemaText(f.SettingsSchema)}
	if catalog.CanAuthor(c.User) && catalog.CheckSource(n.Source) == nil {
		n.SyntaxError, n.SyntaxLine = h.checkSyntax(r, n.Source)
	}
	t, _, err := h.catalog.Create(r.Context(), c.User, n)
	if err != nil {
		if status, _ := h.statusOf(w, err); status < 500 && !errors.Is(err, catalog.ErrForbidden) {
			return h.showEditorIndex(w, r, c, status, err, n, f)
		}
		return err
	}
	redirect(w, r, "/editor/"+t.Slug)
	return nil
}

func (h *Handler) editor(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	return h.showEditor(w, r, c, editorView{Ref: r.PathValue("tool"), VersionID: q.Get("version"), RunID: q.Get("run"), Status: http.StatusOK,
		InfoSaved: q.Get("info") == "saved", SettingsSaved: q.Get("settings") == "saved", ConfirmPublish: q.Get("confirm") == "publish",
		WentBack: q.Get("back") == "1", Continued: q.Get("continued") == "1", Unpublished: q.Get("unpublished") == "1"})
}

// editorView says what the editor shows.
type editorView struct {
	Ref       string // the tool
	VersionID string // empty: the newest
	RunID     string // the sandbox run beside it; empty: the latest of that version
	Status    int
	RunErr    refusal // why a sandbox action was refused
	// Confirm is a secondary sandbox action waiting for the author's confirmation,
	// as on the run page (needsConfirm); nil otherwise.
	Confirm *confirmStep
	// The forms as the author sent them, when the server refused them; nil: as saved.
	Form     *versionForm
	Info     *panel
	RunForm  *runForm
	Settings *panel
	// InfoSaved and SettingsSaved say that the description or the sandbox's settings
	// were just saved.
	InfoSaved, SettingsSaved bool
	// ConfirmPublish asks the author to confirm publishing the version, when there is
	// a reason to doubt it (publishDoubts).
	ConfirmPublish bool
	// WentBack, Continued and Unpublished say what the author just did: went back to an
	// earlier step, went on from the previous version's session, unpublished the tool.
	WentBack, Continued, Unpublished bool
	// Syntax is where the sandbox refused to run the version, as it does not compile;
	// nil otherwise. The page marks that line.
	Syntax *syntaxMark
	// ReviewErr and ReviewNote are a refused submission for review: why, and the note
	// as the author typed it (reviews.go).
	ReviewErr, ReviewNote string
	// Maint is what the co-author section says after a refused change (maintainers.go);
	// nil otherwise.
	Maint *maintNote
}

// versionForm is the editor's form of a version: its source and both schemas as JSON,
// and the server's refusal beside the one it names.
type versionForm struct {
	Source, InputSchema, SettingsSchema                string
	SourceError, InputSchemaError, SettingsSchemaError string
	// Note is what the author wrote about what changed, kept when a save is refused,
	// and NoteError the server's refusal of it.
	Note, NoteError string
	// MaxFiles is the upload cap (SKRIP_UPLOAD_MAX_FILES), over which the schema form
	// says a file field's max is refused.
	MaxFiles int
}

// newVersionForm shows version v, its schemas indented.
func newVersionForm(v store.ToolVersion) *versionForm {
	return &versionForm{Source: v.Source, InputSchema: indentJSON(v.InputSchema), SettingsSchema: indentJSON(v.SettingsSchema)}
}

// indentJSON is raw indented for a text box; "" for none.
func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// refuse places the server's message beside the text box it names.
func (f *versionForm) refuse(field, msg string) {
	switch field {
	case "input_schema":
		f.InputSchemaError = msg
	case "settings_schema":
		f.SettingsSchemaError = msg
	case "note":
		f.NoteError = msg
	default:
		f.SourceError = msg
	}
}

// infoPanel is the editor's form of what users read about t.
func infoPanel(l *Lang, c *call, t store.Tool) *panel {
	p := &panel{Action: "/editor/" + t.Slug + "/info", CSRF: c.CSRF, Fields: newFields([]contract.Field{
		{Name: "title", Label: l.T("editor.info.title"), Kind: contract.FieldString},
		{Name: "summary", Label: l.T("editor.info.summary"), Kind: contract.FieldString},
		{Name: "description", Label: l.T("editor.info.about"), Kind: contract.FieldText},
		{Name: "usage_instructions", Label: l.T("editor.info.usage"), Kind: contract.FieldText},
	}, "info", "info.")}
	p.Fields[0].Value, p.Fields[1].Value, p.Fields[2].Value, p.Fields[3].Value = t.Title, t.Summary, t.Description, t.UsageInstructions
	p.Fields[0].Hint = l.T("editor.info.title_hint")
	p.Fields[1].Hint = l.T("editor.info.summary_hint")
	p.Fields[2].Hint, p.Fields[2].Lines = l.T("editor.info.about_hint"), 2
	p.Fields[3].Hint, p.Fields[3].Lines = l.T("editor.info.usage_hint"), 10
	return p
}

// showEditor renders the editor of a tool's version beside its sandbox run and session,
// as workflow.Service.EditorView finds them.
func (h *Handler) showEditor(w http.ResponseWriter, r *http.Request, c *call, ev editorView) error {
	runErr := ev.RunErr
	ed, err := h.workflow.EditorView(r.Context(), c.User, ev.Ref, ev.VersionID, ev.RunID)
	if err != nil {
		return err
	}
	t, v := ed.Tool, ed.Version
	v = ev.Syntax.marked(v)
	if ev.Form == nil {
		ev.Form = newVersionForm(v)
	}
	ev.Form.MaxFiles = h.limits().MaxFiles
	if ev.Info == nil {
		ev.Info = infoPanel(h.langOf(r), c, t)
		if err := h.addCategoryField(r, h.langOf(r), ev.Info, t); err != nil {
			return err
		}
		ev.Info.Saved = ev.InfoSaved
	}
	if ev.Settings == nil {
		if ev.Settings, err = h.editorSettings(r, c, v); err != nil {
			return err
		}
		if ev.Settings != nil {
			ev.Settings.Saved = ev.SettingsSaved
		}
	}
	data := map[string]any{"Title": h.langOf(r).T("editor.title", "Tool", t.Title), "Tool": t, "Version": v, "Versions": ed.Versions,
		"Limits": h.limits(), "Form": ev.Form, "Info": ev.Info, "CodeMirror": h.hasCodeMirror(),
		"WentBack": ev.WentBack, "Continued": ev.Continued, "Unpublished": ev.Unpublished}
	if data["VersionList"], err = h.versionsPanel(r, c, t, v); err != nil {
		return err
	}
	if err := h.addMaintainerParts(r, c, t, ev.VersionID, data, ev.Maint); err != nil {
		return err
	}
	if ev.ConfirmPublish && v.ID != t.PublishedVersionID && h.catalog.MayPublish(c.User) == nil {
		doubts, err := h.publishDoubts(r, c, t, v)
		if err != nil {
			return err
		}
		if len(doubts) > 0 {
			data["Confirm"] = doubts
		}
	}
	if ev.Settings != nil {
		data["Settings"] = ev.Settings
	}
	if rb, err := h.reviewBox(r, c, t, v); err != nil {
		return err
	} else if rb != nil {
		rb.Error, rb.Note = ev.ReviewErr, ev.ReviewNote
		data["Review"], data["MustSubmit"] = rb, rb.MustSubmit
	}
	if sess := ed.Session; sess != nil {
		var state any
		json.Unmarshal([]byte(sess.State), &state)
		data["Session"] = map[string]any{"Rev": sess.StateRev, "State": indent(state), "Updated": sess.UpdatedAt}
		data["Steps"] = ed.Steps
	}
	if prev := ed.Previous; prev != nil {
		cont := map[string]any{"From": prev.ID, "Expected": int64(0), "Replaces": ed.Session != nil, "Steps": ed.PreviousSteps}
		if ed.Session != nil {
			cont["Expected"] = ed.Session.StateRev
		}
		data["Continue"] = cont
	}
	if rn := ed.Run; rn != nil {
		res, err := h.result(r, c, t, *rn)
		if err != nil {
			return err
		}
		// The action forms go to this version's sandbox session, and are current
		// while that session's latest run is this one.
		res.ActionURL, res.ReloadURL = "/editor/versions/"+v.ID+"/actions/", "/editor/"+t.Slug+"?version="+v.ID
		res.Stale, res.Rev, res.LatestRun = len(res.Actions) > 0, "", ""
		if ed.Current {
			res.Stale, res.Rev = false, strconv.FormatInt(ed.Session.StateRev, 10)
		}
		res.Confirm = ev.Confirm
		res.refuse(runErr)
		data["Result"] = res
		// The line of the code where the author's own run of this version stopped.
		if rn.VersionID == v.ID && rn.UserID == c.User.ID && rn.Context == session.Editor(v.ID).String() && rn.Status != store.StatusSucceeded {
			if n := tracebackLine(res.Stderr); n > 0 {
				data["TracebackLine"] = n
			}
		}
	}
	sf, err := h.sessionFiles(r, c, t, session.Editor(v.ID))
	if err != nil {
		return err
	}
	data["SessionFiles"] = sf
	f := ev.RunForm
	if f == nil {
		if f, err = h.editorRunForm(h.langOf(r), c, v); err != nil {
			return err
		}
	}
	if sf != nil {
		// The names too, so the form promises to reuse the kept files only when the
		// server will: when they fit this version's file slot (KeptFit).
		f.SessionFiles, f.KeptNames = len(sf.Files), sf.names()
	}
	if runErr != (refusal{}) && data["Result"] == nil {
		f.Error = runErr.text(h.langOf(r))
	}
	data["Run"] = f
	h.render(w, r, ev.Status, "editor", c, data)
	return nil
}

func (h *Handler) saveVersion(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	f := &versionForm{Source: r.PostFormValue("source"), InputSchema: r.PostFormValue("input_schema"), SettingsSchema: r.PostFormValue("settings_schema")}
	f.Note = r.PostFormValue("note")
	t, err := h.catalog.Owned(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	n := catalog.NewVersion{Source: f.Source, InputSchema: schemaText(f.InputSchema), SettingsSchema: schemaText(f.SettingsSchema), Note: f.Note}
	if catalog.CheckSource(n.Source) == nil {
		n.SyntaxError, n.SyntaxLine = h.checkSyntax(r, n.Source)
	}
	v, err := h.catalog.AddVersion(r.Context(), c.User, t.Slug, n)
	publish := err == nil && r.PostFormValue("publish") != ""
	if publish {
		// A version that does not compile is saved all the same, but published only
		// once the author confirms it.
		doubts, derr := h.publishDoubts(r, c, t, v)
		if derr != nil {
			return derr
		}
		if len(doubts) > 0 {
			redirect(w, r, "/editor/"+t.Slug+"?confirm=publish"+versionQuery(v.ID))
			return nil
		}
		_, err = h.catalog.Publish(r.Context(), c.User, v.ID)
	}
	if err != nil {
		status, _ := h.statusOf(w, err)
		if status >= 500 || errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrNoVersion) || errors.Is(err, catalog.ErrForbidden) {
			return err
		}
		f.refuse(refusedField(err), h.message(r, err))
		return h.showEditor(w, r, c, editorView{Ref: r.PathValue("tool"), VersionID: r.PostFormValue("version"), Status: status, Form: f})
	}
	redirect(w, r, "/editor/"+r.PathValue("tool")+"?version="+v.ID)
	return nil
}

// schemaText is a schema text box as the catalogue takes it: nil when blank (no
// schema), else the text as it is, which the catalogue parses and checks.
func schemaText(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return json.RawMessage(s)
}

// saveInfo saves what users read about a tool: its title, summary, description and
// usage instructions, and the categories it is listed under.
func (h *Handler) saveInfo(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.catalog.Owned(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	p := infoPanel(h.langOf(r), c, t)
	if err := h.addCategoryField(r, h.langOf(r), p, t); err != nil {
		return err
	}
	p.keep(r.PostForm)
	// The categories are checked first, so a refusal of them leaves the info unsaved too.
	categories := categoryNames(p.value("categories"))
	if err = catalog.CheckCategoryNames(categories); err == nil {
		_, err = h.catalog.UpdateInfo(r.Context(), c.User, t.Slug, p.value("title"), p.value("description"), p.value("summary"), p.value("usage_instructions"))
	}
	if _, sent := r.PostForm["info.categories"]; sent && err == nil {
		_, err = h.catalog.SetCategories(r.Context(), c.User, t.Slug, categories)
	}
	version := r.PostFormValue("version")
	if err != nil {
		status, _ := h.statusOf(w, err)
		if status >= 500 || errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrNoVersion) || errors.Is(err, catalog.ErrForbidden) {
			return err
		}
		p.refuse(refusedField(err), h.message(r, err))
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: version, Status: status, Info: p})
	}
	redirect(w, r, "/editor/"+t.Slug+"?info=saved"+versionQuery(version))
	return nil
}

// versionQuery keeps the editor on version id after a form, when it names one.
func versionQuery(id string) string {
	if id == "" {
		return ""
	}
	return "&version=" + url.QueryEscape(id)
}

// editorSettings is the sandbox's settings panel for version v, or nil when v has no
// settings_schema.
func (h *Handler) editorSettings(r *http.Request, c *call, v store.ToolVersion) (*panel, error) {
	if v.SettingsSchema == nil {
		return nil, nil
	}
	set, err := h.catalog.EditorSettings(r.Context(), c.User, v.ID)
	if err != nil || set.Schema == nil {
		return nil, err
	}
	p := newSettingsPanel(set.Schema, set.Values, "sandbox-", h.langOf(r).T("tool.blank"))
	p.Action, p.CSRF = "/editor/versions/"+v.ID+"/settings", c.CSRF
	return p, nil
}

// saveEditorSettings saves the editor's settings of a version, apart from the
// settings users saved for the tool.
func (h *Handler) saveEditorSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	set, err := h.catalog.EditorSettings(r.Context(), c.User, v.ID)
	if err != nil {
		return err
	}
	_, err = h.catalog.PutEditorSettings(r.Context(), c.User, v.ID, settingsValues(set.Schema, r.PostForm))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) || errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrNoVersion) {
			return err
		}
		p := newSettingsPanel(set.Schema, nil, "sandbox-", h.langOf(r).T("tool.blank"))
		p.Action, p.CSRF = "/editor/versions/"+v.ID+"/settings", c.CSRF
		p.keep(r.PostForm)
		p.refuse(refusedField(err), h.message(r, err))
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, Status: status, Settings: p})
	}
	redirect(w, r, "/editor/"+t.Slug+"?settings=saved"+versionQuery(v.ID))
	return nil
}

// checkSyntax compiles src in a sandbox and returns where it does not compile, as
// "message" and line ("" and 0: it compiles). A check that cannot run (a full queue, a
// broken sandbox) says so in the message, so the version is marked as unchecked rather
// than as fine; the version is saved either way.
func (h *Handler) checkSyntax(r *http.Request, src string) (string, int) {
	l := h.langOf(r)
	se, err := h.runs.CheckSyntax(r.Context(), src)
	switch {
	case err != nil:
		h.log.Warn("syntax check did not run", "error", err)
		return l.T("editor.syntax.unchecked"), 0
	case se == nil:
		return "", 0
	default:
		return se.Message, se.Line
	}
}

// publishDoubts are the reasons to ask before publishing v: its source does not
// compile, or its latest sandbox run did not succeed. None: publish at once.
func (h *Handler) publishDoubts(r *http.Request, c *call, t store.Tool, v store.ToolVersion) ([]string, error) {
	l := h.langOf(r)
	var doubts []string
	if v.SyntaxError != "" {
		if v.SyntaxLine > 0 {
			doubts = append(doubts, l.T("editor.confirm.syntax_line", "Line", v.SyntaxLine, "Message", v.SyntaxError))
		} else {
			doubts = append(doubts, l.T("editor.confirm.syntax", "Message", v.SyntaxError))
		}
	}
	rn, ok, err := h.workflow.LatestSandboxRun(r.Context(), c.User, t, v)
	if err != nil {
		return nil, err
	}
	if ok && store.Terminal(rn.Status) && rn.Status != store.StatusSucceeded {
		doubts = append(doubts, l.T("editor.confirm.run_failed", "Status", l.Status(rn.Status)))
	}
	return doubts, nil
}

// publish publishes a version; one with publishDoubts only with confirm=1, else the
// editor asks first (a page that works without script).
func (h *Handler) publish(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm") != "1" {
		doubts, err := h.publishDoubts(r, c, t, v)
		if err != nil {
			return err
		}
		if len(doubts) > 0 {
			redirect(w, r, "/editor/"+t.Slug+"?confirm=publish"+versionQuery(v.ID))
			return nil
		}
	}
	if _, err := h.catalog.Publish(r.Context(), c.User, v.ID); err != nil {
		return err
	}
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID)
	return nil
}

// unpublish takes a tool away from its users until a version is published again.
func (h *Handler) unpublish(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.catalog.Unpublish(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	redirect(w, r, "/editor/"+t.Slug+"?unpublished=1"+versionQuery(r.PostFormValue("version")))
	return nil
}

// editorRunForm is the editor's run form for version v: the same form users get
// from its input_schema.
func (h *Handler) editorRunForm(l *Lang, c *call, v store.ToolVersion) (*runForm, error) {
	schema, err := inputSchema(v)
	if err != nil {
		return nil, err
	}
	f := newRunForm(schema, "sandbox-", l.T("editor.sandbox.files"), l.T("tool.blank"), h.limits())
	f.Action, f.CSRF, f.Submit = "/editor/versions/"+v.ID+"/runs", c.CSRF, l.T("editor.sandbox.run")
	return f, nil
}

// editorRun runs a version in its editor context with the uploaded files, like a
// production run but in session.Editor(version) with the editor's wall time.
func (h *Handler) editorRun(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	f, err := h.editorRunForm(h.langOf(r), c, v)
	if err != nil {
		return err
	}
	rn, err := h.submitRun(r, c, f, t, v, session.Editor(v.ID))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) {
			return err
		}
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, Status: status, RunForm: f, Syntax: syntaxOf(err)})
	}
	h.runs.Wait(r.Context(), rn.ID, runWait)
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&run="+rn.ID)
	return nil
}

// editorRevision reads the expected_state_rev a sandbox session form sent; a missing
// or broken one is a conflict, as a page that does not know the revision is stale.
func editorRevision(r *http.Request) (int64, error) {
	n, err := strconv.ParseInt(r.PostFormValue("expected_state_rev"), 10, 64)
	if err != nil || n < 0 {
		return 0, errs.New(session.ErrConflict, nil, conflictMessage)
	}
	return n, nil
}

// editorAction takes a next action in a version's sandbox session: the one its latest
// run offers, which may be a run of the previous version the session went on from.
func (h *Handler) editorAction(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	sctx, id := session.Editor(v.ID), r.PathValue("action")
	expected, err := editorRevision(r)
	if err != nil {
		return h.editorRefused(w, r, c, t, v, err)
	}
	latest, offered, err := h.workflow.Offer(r.Context(), t, c.User, sctx, id)
	if err != nil {
		return h.editorRefused(w, r, c, t, v, err)
	}
	in, err := formInput(offered, r.PostForm)
	if err != nil {
		return h.editorRefused(w, r, c, t, v, errs.New(contract.ErrInvalidInput, nil, "%s", err.Error()))
	}
	if step, ask := needsConfirm(latest, offered, r); ask {
		// A secondary action asks first, as on the run page.
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, RunID: latest.ID, Status: http.StatusOK, Confirm: step})
	}
	next, err := h.workflow.Action(r.Context(), workflow.Action{Tool: t, Version: v, User: c.User, Context: sctx,
		ActionID: id, Input: in, ExpectedStateRev: expected})
	if err != nil {
		return h.editorRefused(w, r, c, t, v, err)
	}
	h.runs.Wait(r.Context(), next.ID, runWait)
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&run="+next.ID)
	return nil
}

// editorRefused shows the editor with the reason a sandbox session change was refused
// beside the sandbox; a conflict says to reload.
func (h *Handler) editorRefused(w http.ResponseWriter, r *http.Request, c *call, t store.Tool, v store.ToolVersion, err error) error {
	status, _ := h.statusOf(w, err)
	if !shownToUser(status) {
		return err
	}
	return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, Status: status, RunErr: h.refusalOf(r, err), Syntax: syntaxOf(err)})
}

// editorGoBack makes an earlier step of a version's sandbox session current again
// (workflow.Service.GoBack).
func (h *Handler) editorGoBack(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	expected, err := editorRevision(r)
	if err == nil {
		rev, perr := strconv.ParseInt(r.PostFormValue("rev"), 10, 64)
		if perr != nil {
			err = errs.New(session.ErrNoStep, map[string]any{"rev": r.PostFormValue("rev")}, "no step %q to go back to", r.PostFormValue("rev"))
		} else {
			_, err = h.workflow.GoBack(r.Context(), c.User, v.ID, expected, rev)
		}
	}
	if err != nil {
		return h.editorRefused(w, r, c, t, v, err)
	}
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&back=1")
	return nil
}

// editorContinue lets a version's sandbox session go on from the previous version's:
// its state, offered next actions and files (workflow.Service.ContinueFrom).
func (h *Handler) editorContinue(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	expected, err := editorRevision(r)
	var rev *int64
	if s := r.PostFormValue("rev"); s != "" && err == nil {
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			err = errs.New(session.ErrNoStep, map[string]any{"rev": s}, "no step %q to go on from", s)
		}
		rev = &n
	}
	if err == nil {
		_, err = h.workflow.ContinueFrom(r.Context(), c.User, workflow.Continue{VersionID: v.ID, From: r.PostFormValue("from"), Rev: rev, Expected: &expected})
	}
	// A version that is not one to go on from is no refusal of the sandbox's: the page
	// offers only the previous version of the same tool.
	if errors.Is(err, catalog.ErrNoVersion) || errors.Is(err, catalog.ErrForbidden) || errors.Is(err, workflow.ErrContinueFrom) {
		return err
	}
	if err != nil {
		return h.editorRefused(w, r, c, t, v, err)
	}
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&continued=1")
	return nil
}
