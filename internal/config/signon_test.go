package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSignOnSettings(t *testing.T) {
	load := func(env map[string]string) (*Loaded, error) {
		return Load(pflag.NewFlagSet("t", pflag.ContinueOnError), func(k string) string { return env[k] })
	}
	l, err := load(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if l.SignOn.Issuer != "" || !reflect.DeepEqual(l.SignOn.Scopes, []string{"openid", "profile", "email"}) ||
		l.SignOn.DefaultRole != "user" || l.Passwords != "on" || len(l.SignOn.RoleMap) != 0 {
		t.Fatalf("defaults: %+v, passwords %q", l.SignOn, l.Passwords)
	}
	l, err = load(map[string]string{
		"SKRIP_OIDC_ISSUER": "https://login.microsoftonline.com/t/v2.0", "SKRIP_OIDC_SCOPES": "openid,email groups",
		"SKRIP_OIDC_ALLOWED_DOMAINS": "skola.se, elev.skola.se", "SKRIP_OIDC_ROLE_MAP": " g1=admin , g2 = author,",
		"SKRIP_PASSWORDS": "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.SignOn.Scopes, []string{"openid", "email", "groups"}) ||
		!reflect.DeepEqual(l.SignOn.AllowedDomains, []string{"skola.se", "elev.skola.se"}) ||
		!reflect.DeepEqual(l.SignOn.RoleMap, map[string]string{"g1": "admin", "g2": "author"}) || l.Passwords != "admin" {
		t.Fatalf("parsed: %+v, passwords %q", l.SignOn, l.Passwords)
	}
	for env, want := range map[string]string{"SKRIP_OIDC_ROLE_MAP": "g1", "SKRIP_PASSWORDS": "off"} {
		val := map[string]string{"SKRIP_OIDC_ROLE_MAP": "g1=admin,g1", "SKRIP_PASSWORDS": "off"}[env]
		if _, err := load(map[string]string{env: val}); err == nil || !strings.Contains(err.Error(), env) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: err = %v", env, val, err)
		}
	}
}
