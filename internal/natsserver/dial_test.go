package natsserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// authServer runs a nats-server from the Go module, in this process but listening on
// loopback like any external server, with the authentication opts set.
func authServer(t *testing.T, opts *server.Options) string {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	if opts.TLSConfig != nil {
		return strings.Replace(srv.ClientURL(), "nats://", "tls://", 1)
	}
	return srv.ClientURL()
}

func TestDial(t *testing.T) {
	dir := t.TempDir()
	pki := newPKI(t, dir)

	// NKey user.
	nkUser, _ := nkeys.CreateUser()
	nkPub, _ := nkUser.PublicKey()
	nkSeed, _ := nkUser.Seed()
	nkFile := writeFile(t, dir, "user.nk", nkSeed)
	otherNK, _ := nkeys.CreateUser()
	otherSeed, _ := otherNK.Seed()
	otherNKFile := writeFile(t, dir, "other.nk", otherSeed)

	// Operator mode, for a creds file: an operator signs an account, which signs a user.
	opKP, _ := nkeys.CreateOperator()
	opPub, _ := opKP.PublicKey()
	accKP, _ := nkeys.CreateAccount()
	accPub, _ := accKP.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	credsFor := func(name string, signer nkeys.KeyPair) string {
		u, _ := nkeys.CreateUser()
		uPub, _ := u.PublicKey()
		uSeed, _ := u.Seed()
		uJWT, err := jwt.NewUserClaims(uPub).Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := jwt.FormatUserConfig(uJWT, uSeed)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, name, creds)
	}
	goodCreds := credsFor("good.creds", accKP)
	strangerKP, _ := nkeys.CreateAccount()
	badCreds := credsFor("bad.creds", strangerKP)
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	opJWT, err := jwt.NewOperatorClaims(opPub).Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	opClaims, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		opts    *server.Options
		good    Auth
		bad     []Auth
		wantBad []string // in the error of each bad Auth
	}{
		{
			name: "user and password",
			opts: &server.Options{Username: "skrip", Password: "s3cret-pw"},
			good: Auth{User: "skrip", Password: "s3cret-pw"},
			bad:  []Auth{{User: "skrip", Password: "wrong"}, {}},
			wantBad: []string{"refused the credentials of SKRIP_NATS_USER and SKRIP_NATS_PASSWORD",
				"requires credentials; set SKRIP_NATS_USER and SKRIP_NATS_PASSWORD"},
		},
		{
			name:    "token",
			opts:    &server.Options{Authorization: "tok-123456"},
			good:    Auth{Token: "tok-123456"},
			bad:     []Auth{{Token: "tok-wrong"}},
			wantBad: []string{"refused the credentials of SKRIP_NATS_TOKEN"},
		},
		{
			name:    "nkey seed",
			opts:    &server.Options{Nkeys: []*server.NkeyUser{{Nkey: nkPub}}},
			good:    Auth{NKeySeedFile: nkFile},
			bad:     []Auth{{NKeySeedFile: otherNKFile}},
			wantBad: []string{"refused the credentials of SKRIP_NATS_NKEY_SEED"},
		},
		{
			name:    "creds file",
			opts:    &server.Options{TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver},
			good:    Auth{CredsFile: goodCreds},
			bad:     []Auth{{CredsFile: badCreds}, {CredsFile: filepath.Join(dir, "missing.creds")}},
			wantBad: []string{"refused the credentials of SKRIP_NATS_CREDS", "SKRIP_NATS_CREDS"},
		},
		{
			name: "mutual TLS",
			opts: &server.Options{TLS: true, TLSVerify: true, TLSTimeout: 5, TLSConfig: &tls.Config{
				Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}},
			good: Auth{TLSCA: pki.caFile, TLSCert: pki.clientCert, TLSKey: pki.clientKey},
			bad: []Auth{
				{TLSCert: pki.clientCert, TLSKey: pki.clientKey},
				{TLSCA: pki.otherCAFile, TLSCert: pki.clientCert, TLSKey: pki.clientKey},
				{TLSCA: pki.caFile},
			},
			wantBad: []string{"set SKRIP_NATS_TLS_CA", "set SKRIP_NATS_TLS_CA", "set SKRIP_NATS_TLS_CERT and SKRIP_NATS_TLS_KEY"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := authServer(t, c.opts)
			nc, err := Dial(url, c.good, nats.Timeout(3*time.Second))
			if err != nil {
				t.Fatalf("with the right settings: %v", err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			nc.Close()
			for i, a := range c.bad {
				nc, err := Dial(url, a, nats.Timeout(3*time.Second))
				if err == nil {
					nc.Close()
					t.Errorf("bad settings %d (%+v) connected", i, a)
					continue
				}
				if !strings.Contains(err.Error(), c.wantBad[i]) {
					t.Errorf("bad settings %d: error %q does not say %q", i, err, c.wantBad[i])
				}
			}
		})
	}
}

func TestAuthCheck(t *testing.T) {
	cases := []struct {
		a    Auth
		want string
	}{
		{Auth{User: "u", Password: "p", Token: "t"}, "SKRIP_NATS_USER/SKRIP_NATS_PASSWORD and SKRIP_NATS_TOKEN are set"},
		{Auth{Token: "t", CredsFile: "c"}, "SKRIP_NATS_TOKEN and SKRIP_NATS_CREDS are set"},
		{Auth{User: "u"}, "without SKRIP_NATS_PASSWORD"},
		{Auth{Password: "p"}, "without SKRIP_NATS_USER"},
		{Auth{TLSCert: "c"}, "SKRIP_NATS_TLS_CERT and SKRIP_NATS_TLS_KEY go together"},
	}
	for _, c := range cases {
		err := c.a.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v, want %q", c.a, err, c.want)
		}
	}
	if err := (Auth{User: "u", Password: "p", TLSCA: "ca"}).Check(); err != nil {
		t.Errorf("user, password and a CA: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"nats://h:4222":                         "nats://h:4222",
		"nats://u:secret@h:4222":                "nats://u:xxxxx@h:4222",
		"nats://tok@h:4222,nats://u:pw@h2:4222": "nats://xxxxx@h:4222,nats://u:xxxxx@h2:4222",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := Dial("nats://u:hunter2@127.0.0.1:1", Auth{}, nats.Timeout(time.Second))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Dial error shows the password or is nil: %v", err)
	}
}

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a client certificate,
// and a second CA that signed neither.
type pki struct {
	pool                  *x509.CertPool
	server                tls.Certificate
	caFile, otherCAFile   string
	clientCert, clientKey string
}

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	ca, caKey, caPEM := newCA(t, "skrip test CA")
	_, _, otherPEM := newCA(t, "some other CA")
	p := pki{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = writeFile(t, dir, "ca.pem", caPEM)
	p.otherCAFile = writeFile(t, dir, "other-ca.pem", otherPEM)

	srvCert, srvKey := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "nats"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	var err error
	if p.server, err = tls.X509KeyPair(srvCert, srvKey); err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "skrip"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	p.clientCert = writeFile(t, dir, "client.pem", cliCert)
	p.clientKey = writeFile(t, dir, "client-key.pem", cliKey)
	return p
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
