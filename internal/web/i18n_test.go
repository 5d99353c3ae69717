package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestCatalogues: every language has every message the other has, and every message a
// template or the Go code asks for exists, so no page shows a message id or falls back
// to another language.
func TestCatalogues(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	sv, en := c.ids["sv"], c.ids["en"]
	if len(sv) == 0 || len(en) == 0 {
		t.Fatalf("catalogues hold %d Swedish and %d English messages", len(sv), len(en))
	}
	for id := range sv {
		if !en[id] {
			t.Errorf("%q is in Swedish but not in English", id)
		}
	}
	for id := range en {
		if !sv[id] {
			t.Errorf("%q is in English but not in Swedish", id)
		}
	}
	used := map[string]string{}
	inTemplate := regexp.MustCompile(`\bt\s+"([^"]+)"`)
	tmpl, _ := fs.Glob(assets, "templates/*.html")
	for _, n := range tmpl {
		b, _ := fs.ReadFile(assets, n)
		for _, m := range inTemplate.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = n
		}
	}
	inGo := regexp.MustCompile(`\.T\("([^"]+)"`)
	gofiles, _ := filepath.Glob("*.go")
	for _, n := range gofiles {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inGo.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = n
		}
	}
	// The page's scripts ask for their messages without the "js." the catalogue files
	// them under (scriptText). A key put together ("run.status." + s) is not checked.
	inScript := regexp.MustCompile(`\btr\(\s*"([^"]+)"\s*[,)]`)
	scripts, _ := fs.Glob(assets, "static/*.js")
	for _, n := range scripts {
		b, _ := fs.ReadFile(assets, n)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, m := range inScript.FindAllStringSubmatch(line, -1) {
				used["js."+m[1]] = n
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("found no message in use")
	}
	// Every refusal the server can give is told on the page in the page's language
	// (Handler.message), from its reason and details, never in the server's English.
	for _, reason := range httpkit.Reasons() {
		used["error."+reason] = "httpkit's error table"
	}
	// Every reason skrip fails a run for, and every error source a run recorded before
	// reasons were may carry, is said in the page's language (reasonText).
	for _, code := range run.Codes() {
		used["run.reason."+code] = "run.Codes"
	}
	for _, code := range []string{run.NoticeOutputLimit, "unreadable"} {
		used["run.notice_reason."+code] = "sayNotices"
	}
	for _, src := range []string{"timed_out", store.SourceCrash, store.SourceRunner, store.SourcePolicy} {
		used["run.reason.source."+src] = "reasonText"
	}
	var missing []string
	for id, where := range used {
		if !sv[id] || !en[id] {
			missing = append(missing, id+" (in "+where+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no message %s", m)
	}
}

// TestRefusalsRender: every refusal's sentence renders in every language whatever
// details its error carries (none, or some of the keys its callers pass), with no
// template left in it and no "<no value>" where a detail is missing.
func TestRefusalsRender(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	samples := []map[string]any{
		nil,
		{"field": "ttl", "value": "9y"},
		{"field": "password", "min_length": 12},
		{"field": "title", "rule": "required"},
		{"field": "slug", "value": "Bad Slug", "rule": "pattern"},
		{"field": "source", "rule": "max_length", "limit_bytes": 262144},
		{"file": "elever.csv", "limit_bytes": 10 << 20, "quota_bytes": 1 << 30, "size_bytes": 12 << 20},
		{"field": "klasslista", "rule": "accept", "file": "bild.png", "accept": []string{".csv"}},
		{"limit": 5, "max": 3, "retry_after_s": 30, "name": "anna", "slug": "pdf", "tool": "pdf"},
	}
	for _, reason := range httpkit.Reasons() {
		for _, tag := range []string{"sv", "en"} {
			for _, d := range samples {
				s, ok := c.lang(tag).refusal(reason, d)
				if !ok {
					t.Errorf("%s: no sentence for %s", tag, reason)
					break
				}
				if s == "error."+reason || s == "" || strings.Contains(s, "<no value>") || strings.Contains(s, "{{") || strings.Contains(s, "<nil>") {
					t.Errorf("%s: %s with %v renders %q", tag, reason, d, s)
				}
			}
		}
	}
}

// TestRefusalInPageLanguage: a refusal reaches a Swedish page in Swedish, filled from its
// details, sizes written the Swedish way, and never as the server's English sentence.
func TestRefusalInPageLanguage(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{text: c, lang: "sv"}
	e := errs.New(staging.ErrTooLarge, map[string]any{"file": "elever.csv", "limit_bytes": 10_500_000},
		"elever.csv is larger than the %d-byte limit", 10_500_000)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	got := h.message(r, e)
	if got == e.Message || !strings.Contains(got, "”elever.csv”") || !strings.Contains(got, "10,5 MB") || !strings.Contains(got, "gränsen") {
		t.Errorf("Swedish page says %q", got)
	}
	r.Header.Set("Accept-Language", "en")
	if got := h.message(r, e); !strings.Contains(got, "“elever.csv”") || !strings.Contains(got, "10.5 MB") {
		t.Errorf("English page says %q", got)
	}
}

// TestChooseLanguage: the picked language beats the browser's, the browser's beats the
// server's default, and a language the UI does not speak falls back to the default.
func TestChooseLanguage(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cookie, accept, fallback, want string
	}{
		{"nothing asked", "", "", "sv", "sv"},
		{"server default en", "", "", "en", "en"},
		{"browser English", "", "en-US,en;q=0.9", "sv", "en"},
		{"browser Swedish", "", "sv-SE,sv;q=0.9,en;q=0.5", "en", "sv"},
		{"browser prefers English over Swedish", "", "en-GB,sv;q=0.5", "sv", "en"},
		{"browser German only", "", "de-DE,de;q=0.9", "sv", "sv"},
		{"picked beats browser", "sv", "en-US", "en", "sv"},
		{"unknown pick ignored", "fr", "en-US", "sv", "en"},
		{"bad header", "", ";;;q=x", "sv", "sv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: LangCookie, Value: tc.cookie})
			}
			if tc.accept != "" {
				r.Header.Set("Accept-Language", tc.accept)
			}
			if got := c.choose(r, tc.fallback).Tag; got != tc.want {
				t.Errorf("got %s; want %s", got, tc.want)
			}
		})
	}
}

func TestSwedishCountsAndTimes(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	sv := c.lang("sv")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{10 * time.Second: "just nu", time.Minute: "för en minut sedan",
		3 * time.Minute: "för 3 minuter sedan", 5 * time.Hour: "för 5 timmar sedan", 30 * time.Hour: "i går", 4 * 24 * time.Hour: "för 4 dagar sedan"} {
		if got := sv.Ago(now.Add(-d), now); got != want {
			t.Errorf("Ago(-%v) = %q; want %q", d, got, want)
		}
	}
	if got := sv.Until(now.Add(3*time.Minute), now); got != "om 3 minuter" {
		t.Errorf("Until(3m) = %q", got)
	}
	for n, want := range map[int64]string{1: "1 byte", 512: "512 byte", 12_345_678: "12,3 MB"} {
		if got := sv.Size(n); got != want {
			t.Errorf("Size(%d) = %q; want %q", n, got, want)
		}
	}
	if got := sv.Status("succeeded"); got != "Klar" {
		t.Errorf("status succeeded = %q", got)
	}
	if got := sv.T("error.internal", "RequestID", "r1"); !strings.Contains(got, "r1") || !strings.Contains(got, "servern") {
		t.Errorf("error.internal = %q", got)
	}
}

// TestInputRefusals: a refused input says which field and what to change, rule by rule.
func TestInputRefusals(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	sv := c.lang("sv")
	for _, tc := range []struct {
		details map[string]any
		want    string
	}{
		{map[string]any{"field": "klasslista", "rule": "min", "files": 0, "min": 1, "max": 1}, "”klasslista” behöver minst 1 fil, och 0 skickades."},
		{map[string]any{"field": "filer", "rule": "max", "files": 5, "min": 1, "max": 3}, "”filer” tar högst 3 filer, och 5 skickades."},
		{map[string]any{"field": "filer", "rule": "accept", "file": "bild.png", "accept": []any{".csv", ".xlsx"}}, "Filen ”bild.png” är inte av en typ som ”filer” tar emot (.csv, .xlsx). Välj en fil av rätt typ."},
		{map[string]any{"field": "size", "rule": "type", "kind": "integer"}, "”size” ska vara ett heltal, till exempel 4."},
		{map[string]any{"field": "mode", "rule": "enum", "kind": "enum"}, "Välj ett av alternativen för ”mode”."},
		{nil, "Det du fyllt i går inte att använda. Kontrollera formuläret och försök igen."},
	} {
		if got, _ := sv.refusal("invalid_input", tc.details); got != tc.want {
			t.Errorf("%v: %q; want %q", tc.details, got, tc.want)
		}
	}
}
