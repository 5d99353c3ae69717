package natsserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Auth is how skrip proves itself to an external NATS server: the operator's
// SKRIP_NATS_* credential and TLS settings. At most one way to authenticate is set (user
// and password, a token, a creds file or an NKey seed file); TLS combines with any.
type Auth struct {
	User         string // SKRIP_NATS_USER
	Password     string // SKRIP_NATS_PASSWORD
	Token        string // SKRIP_NATS_TOKEN
	CredsFile    string // SKRIP_NATS_CREDS: a .creds file (user JWT and NKey seed)
	NKeySeedFile string // SKRIP_NATS_NKEY_SEED: a file holding a user NKey seed ("SU…")
	TLSCA        string // SKRIP_NATS_TLS_CA: PEM CAs that sign the server's certificate
	TLSCert      string // SKRIP_NATS_TLS_CERT: PEM client certificate, with TLSKey
	TLSKey       string // SKRIP_NATS_TLS_KEY
}

// IsZero reports whether no setting of a is given.
func (a Auth) IsZero() bool { return a == Auth{} }

// credentials names the settings that authenticate, for messages; "" when none does.
func (a Auth) credentials() string {
	switch {
	case a.User != "" || a.Password != "":
		return "SKRIP_NATS_USER and SKRIP_NATS_PASSWORD"
	case a.Token != "":
		return "SKRIP_NATS_TOKEN"
	case a.CredsFile != "":
		return "SKRIP_NATS_CREDS (" + a.CredsFile + ")"
	case a.NKeySeedFile != "":
		return "SKRIP_NATS_NKEY_SEED (" + a.NKeySeedFile + ")"
	}
	return ""
}

// Check reports settings that cannot work together, naming them.
func (a Auth) Check() error {
	var ways []string
	if a.User != "" || a.Password != "" {
		ways = append(ways, "SKRIP_NATS_USER/SKRIP_NATS_PASSWORD")
	}
	if a.Token != "" {
		ways = append(ways, "SKRIP_NATS_TOKEN")
	}
	if a.CredsFile != "" {
		ways = append(ways, "SKRIP_NATS_CREDS")
	}
	if a.NKeySeedFile != "" {
		ways = append(ways, "SKRIP_NATS_NKEY_SEED")
	}
	switch {
	case len(ways) > 1:
		return fmt.Errorf("NATS credentials: %s are set; give one way to authenticate", strings.Join(ways, " and "))
	case a.User != "" && a.Password == "":
		return errors.New("NATS credentials: SKRIP_NATS_USER is set without SKRIP_NATS_PASSWORD")
	case a.User == "" && a.Password != "":
		return errors.New("NATS credentials: SKRIP_NATS_PASSWORD is set without SKRIP_NATS_USER")
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return errors.New("NATS TLS: SKRIP_NATS_TLS_CERT and SKRIP_NATS_TLS_KEY go together; set both or neither")
	}
	return nil
}

// Dial connects to the external NATS server or cluster at serverURL (one URL or several,
// comma-separated) with a, then opts. Its errors say which setting to look at: refused
// credentials, an untrusted server certificate, a missing client certificate.
func Dial(serverURL string, a Auth, opts ...nats.Option) (*nats.Conn, error) {
	shown := RedactURL(serverURL)
	if err := a.Check(); err != nil {
		return nil, err
	}
	var o []nats.Option
	switch {
	case a.User != "":
		if strings.Contains(serverURL, "@") {
			return nil, fmt.Errorf("NATS credentials: SKRIP_NATS_URL %s carries a user and SKRIP_NATS_USER is set too; use one", shown)
		}
		o = append(o, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		o = append(o, nats.Token(a.Token))
	case a.CredsFile != "":
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("NATS credentials: SKRIP_NATS_CREDS: %w", err)
		}
		o = append(o, nats.UserCredentials(a.CredsFile))
	case a.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("NATS credentials: SKRIP_NATS_NKEY_SEED %s: %w", a.NKeySeedFile, err)
		}
		o = append(o, opt)
	}
	if a.TLSCA != "" || a.TLSCert != "" {
		tc, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		o = append(o, nats.Secure(tc))
	}
	nc, err := nats.Connect(serverURL, append(o, opts...)...)
	if err != nil {
		return nil, a.explain(shown, err)
	}
	return nc, nil
}

func (a Auth) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.TLSCA != "" {
		pem, err := os.ReadFile(a.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("NATS TLS: SKRIP_NATS_TLS_CA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("NATS TLS: SKRIP_NATS_TLS_CA %s holds no PEM certificate", a.TLSCA)
		}
	}
	if a.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("NATS TLS: SKRIP_NATS_TLS_CERT %s and SKRIP_NATS_TLS_KEY %s: %w", a.TLSCert, a.TLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// explain turns a failed connect into a message naming the setting to fix.
func (a Auth) explain(shown string, err error) error {
	prefix := "connecting to NATS at " + shown
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrAccountAuthExpired):
		if c := a.credentials(); c != "" {
			return fmt.Errorf("%s: the server refused the credentials of %s: %w", prefix, c, err)
		}
		return fmt.Errorf("%s: the server requires credentials; set SKRIP_NATS_USER and SKRIP_NATS_PASSWORD, SKRIP_NATS_TOKEN, SKRIP_NATS_CREDS or SKRIP_NATS_NKEY_SEED: %w", prefix, err)
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &verify):
		return fmt.Errorf("%s: the server's TLS certificate is not trusted; set SKRIP_NATS_TLS_CA to the CA that signed it: %w", prefix, err)
	case errors.As(err, &hostname):
		return fmt.Errorf("%s: the server's TLS certificate is not for this host name; use the name it was issued for in SKRIP_NATS_URL: %w", prefix, err)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%s: SKRIP_NATS_TLS_* are set but the server does not offer TLS: %w", prefix, err)
	case strings.Contains(err.Error(), "tls") && a.TLSCert == "":
		// Under TLS 1.3 a server that wants a client certificate closes the connection
		// after the handshake, without saying why.
		return fmt.Errorf("%s: TLS failed; if the server wants a client certificate, set SKRIP_NATS_TLS_CERT and SKRIP_NATS_TLS_KEY: %w", prefix, err)
	case strings.Contains(err.Error(), "tls"):
		return fmt.Errorf("%s: TLS failed; check that the server accepts the client certificate of SKRIP_NATS_TLS_CERT (%s): %w", prefix, a.TLSCert, err)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// RedactURL hides the password in each URL of a comma-separated NATS server list, for
// logs and messages.
func RedactURL(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		if _, ok := u.User.Password(); ok {
			parts[i] = u.Redacted()
		} else {
			u.User = url.User("xxxxx")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
