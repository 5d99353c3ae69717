package web

import (
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
	"gopkg.in/yaml.v3"
)

// The interface speaks Swedish first, and English. Its text lives in message catalogues
// under locales/, one file per part of the UI and language ("run.sv.yaml",
// "run.en.yaml"), read with go-i18n: nested keys join with dots ("run.downloads"), a
// message with "one" and "other" is chosen by a count, and {{.Name}} in a message is
// filled from the arguments.

// Languages the UI speaks, the default first.
var uiLangs = []language.Tag{language.Swedish, language.English}

// LangCookie is the cookie that holds a language the user picked over the browser's.
const LangCookie = "skrip_lang"

// Lang is one language of the UI: its messages and the ways it writes counts and times.
type Lang struct {
	Tag string // "sv" or "en"
	loc *i18n.Localizer
}

// catalogue holds every message of every language.
type catalogue struct {
	bundle  *i18n.Bundle
	langs   map[string]*Lang
	matcher language.Matcher
	ids     map[string]map[string]bool // language → message ids, for tests
}

// loadCatalogue reads every locales/*.{lang}.yaml of fsys.
func loadCatalogue(fsys fs.FS) (*catalogue, error) {
	b := i18n.NewBundle(language.Swedish)
	b.RegisterUnmarshalFunc("yaml", yaml.Unmarshal)
	names, err := fs.Glob(fsys, "locales/*.yaml")
	if err != nil {
		return nil, err
	}
	c := &catalogue{bundle: b, langs: map[string]*Lang{}, matcher: language.NewMatcher(uiLangs), ids: map[string]map[string]bool{}}
	for _, n := range names {
		f, err := b.LoadMessageFileFS(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("web: message catalogue %s: %w", path.Base(n), err)
		}
		tag := f.Tag.String()
		if c.ids[tag] == nil {
			c.ids[tag] = map[string]bool{}
		}
		for _, m := range f.Messages {
			if c.ids[tag][m.ID] {
				return nil, fmt.Errorf("web: message catalogue %s: %q is defined twice for %s", path.Base(n), m.ID, tag)
			}
			c.ids[tag][m.ID] = true
		}
	}
	for _, t := range uiLangs {
		tag := t.String()
		// Each language stands alone: a message missing from it is an error, caught by
		// TestCatalogues, never another language's text shown in its place.
		c.langs[tag] = &Lang{Tag: tag, loc: i18n.NewLocalizer(b, tag)}
	}
	return c, nil
}

// lang is the language named by tag ("sv", "en"), or the default.
func (c *catalogue) lang(tag string) *Lang {
	if l, ok := c.langs[tag]; ok {
		return l
	}
	return c.langs[uiLangs[0].String()]
}

// choose picks the language of a request: the one the user picked (LangCookie), else
// the best of the browser's Accept-Language that the UI speaks, else fallback.
func (c *catalogue) choose(r *http.Request, fallback string) *Lang {
	if ck, err := r.Cookie(LangCookie); err == nil {
		if l, ok := c.langs[ck.Value]; ok {
			return l
		}
	}
	if al := r.Header.Get("Accept-Language"); al != "" {
		prefs, _, err := language.ParseAcceptLanguage(al)
		if err == nil && len(prefs) > 0 {
			if _, i, conf := c.matcher.Match(prefs...); conf >= language.High {
				return c.langs[uiLangs[i].String()]
			}
		}
	}
	return c.lang(fallback)
}

// T is the message id in l, with args as name, value pairs for its {{.Name}} fields; a
// "Count" argument also chooses between its "one" and "other" forms. A missing message
// shows as its id, so that it is seen, and fails TestCatalogues.
func (l *Lang) T(id string, args ...any) string {
	data := map[string]any{}
	var count any
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		data[k] = args[i+1]
		if k == "Count" {
			count = args[i+1]
		}
	}
	s, err := l.loc.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: data, PluralCount: count})
	if err != nil {
		return id
	}
	return s
}

// Has reports whether l has a message id.
func (l *Lang) Has(id string) bool {
	_, err := l.loc.Localize(&i18n.LocalizeConfig{MessageID: id})
	return err == nil
}

// Size formats a byte count as Size does, with l's decimal mark and word for bytes.
func (l *Lang) Size(n int64) string {
	if n < 1000 {
		return l.T("size.bytes", "Count", n)
	}
	s := Size(n)
	if l.Tag == "sv" {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

// Ago says in l how long before now t was: "just nu", "för 3 minuter sedan"; past a
// month, the date.
func (l *Lang) Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return l.Until(t, now)
	case d < 45*time.Second:
		return l.T("time.just_now")
	case d < 90*time.Second:
		return l.T("time.minutes_ago", "Count", 1)
	case d < 45*time.Minute:
		return l.T("time.minutes_ago", "Count", int(math.Round(d.Minutes())))
	case d < 90*time.Minute:
		return l.T("time.hours_ago", "Count", 1)
	case d < 22*time.Hour:
		return l.T("time.hours_ago", "Count", int(math.Round(d.Hours())))
	case d < 36*time.Hour:
		return l.T("time.yesterday")
	case d < 30*24*time.Hour:
		return l.T("time.days_ago", "Count", int(math.Round(d.Hours()/24)))
	}
	return t.UTC().Format("2006-01-02")
}

// Until says in l how long after now t is: "om 3 minuter".
func (l *Lang) Until(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return l.T("time.now")
	case d < 90*time.Second:
		return l.T("time.in_minutes", "Count", 1)
	case d < 45*time.Minute:
		return l.T("time.in_minutes", "Count", int(math.Round(d.Minutes())))
	case d < 90*time.Minute:
		return l.T("time.in_hours", "Count", 1)
	case d < 36*time.Hour:
		return l.T("time.in_hours", "Count", int(math.Round(d.Hours())))
	}
	return l.T("time.in_days", "Count", int(math.Round(d.Hours()/24)))
}

// Stamp is t as a date and time in UTC, which the page's script shows in the browser's
// time zone.
func (l *Lang) Stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") + " UTC" }

// Status is the label of a run status in l.
func (l *Lang) Status(s string) string {
	if id := "status." + s; l.Has(id) {
		return l.T(id)
	}
	return s
}

// scriptText is the messages the page's script needs (those under "js."), keyed
// without the prefix, for the page to carry as JSON. They are sent as written: their
// placeholders are the script's ("{n}"), not templates.
func (c *catalogue) scriptText(l *Lang) map[string]string {
	out := map[string]string{}
	ids := make([]string, 0)
	for id := range c.ids[l.Tag] {
		if strings.HasPrefix(id, "js.") {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		out[strings.TrimPrefix(id, "js.")] = l.T(id)
	}
	return out
}
