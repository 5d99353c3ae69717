package config

import (
	"fmt"
	"strings"
)

// SignOn is OpenID Connect sign-in's settings (SKRIP_OIDC_*).
type SignOn struct {
	Issuer       string
	Name         string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// AllowedDomains are the e-mail domains that may sign on, lower case; empty: any.
	AllowedDomains []string
	RoleClaim      string
	// RoleMap maps a value of RoleClaim to a role.
	RoleMap     map[string]string
	DefaultRole string
}

// words binds a list separated by commas or spaces; empty entries are dropped.
func words(field func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		*field(c) = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		return nil
	}
}

// pairs binds key=value pairs separated by commas.
func pairs(field func(*Config) *map[string]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		out := map[string]string{}
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			k, val, ok := strings.Cut(p, "=")
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			if !ok || k == "" || val == "" {
				return fmt.Errorf("%q is not a value=role pair such as skrip-admins=admin", p)
			}
			out[k] = val
		}
		*field(c) = out
		return nil
	}
}
