package hosts

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// PostgresBin is where Debian puts PostgreSQL 15's server programs.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// Postgres is a PostgreSQL server of its own on host "db", separate from any the machine
// runs. Its superuser is postgres (over the Unix socket only); skrip's role and database
// are both "skrip", password "skrip".
type Postgres struct {
	Host    *Host
	Proc    *Proc
	DataDir string // owned by user postgres; also holds the Unix socket
}

// PostgresPort is the port the server listens on at the db host's address.
const PostgresPort = 5432

// URL is the database URL of role skrip on database skrip.
func (pg *Postgres) URL() string {
	return fmt.Sprintf("postgres://skrip:skrip@%s:%d/skrip?sslmode=disable", pg.Host.Addr, PostgresPort)
}

// StartPostgres adds host "db", makes a cluster in a new directory under parent (which
// user postgres must be able to traverse; os.TempDir() is), starts it on db's address
// and creates role and database skrip. Removing the directory is the caller's job
// (RemoveAll on DataDir, after Network.Close).
func StartPostgres(ctx context.Context, n *Network, parent string) (_ *Postgres, err error) {
	if _, err := os.Stat(filepath.Join(PostgresBin, "postgres")); err != nil {
		return nil, fmt.Errorf("%w: PostgreSQL 15 not found (apt-get install postgresql-15): %v", ErrUnavailable, err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	data, err := os.MkdirTemp(parent, "skrip-pg-")
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	var h *Host
	defer func() {
		if err != nil {
			if h != nil {
				h.KillAll()
			}
			os.RemoveAll(data)
		}
	}()
	if err := n.ReapAlso(data); err != nil {
		return nil, err
	}
	if err := os.Chown(data, uid, gid); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	asPostgres := func(bin string, args ...string) error {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "setpriv", append([]string{"--reuid=" + u.Uid, "--regid=" + u.Gid,
			"--init-groups", filepath.Join(PostgresBin, bin)}, args...)...)
		cmd.Dir = data
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("hosts: %s: %v\n%s", bin, err, out)
		}
		return nil
	}
	if err := asPostgres("initdb", "-D", data, "-U", "postgres", "-E", "UTF8", "--locale=C",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"); err != nil {
		return nil, err
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	fmt.Fprintf(hba, "host all all %s/24 scram-sha-256\n", n.Gateway)
	hba.Close()

	h, err = n.AddHost(ctx, "db")
	if err != nil {
		return nil, err
	}
	// fsync off: the tests kill API nodes, workers and NATS nodes, never the database,
	// and a 2-core machine has no time to spare.
	p, err := h.Start(Command{Name: "postgres", Path: filepath.Join(PostgresBin, "postgres"), User: "postgres",
		Args: []string{"-D", data, "-h", h.Addr, "-p", strconv.Itoa(PostgresPort), "-k", data,
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "max_connections=200"}})
	if err != nil {
		return nil, err
	}
	pg := &Postgres{Host: h, Proc: p, DataDir: data}
	if err := pg.waitListening(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	for i := 0; ; i++ { // listening comes before accepting queries
		err := asPostgres("pg_isready", "-q", "-h", data, "-p", strconv.Itoa(PostgresPort))
		if err == nil {
			break
		}
		if i == 100 {
			return nil, fmt.Errorf("hosts: postgres does not accept connections: %w\n%s", err, p.Log(4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, sql := range []string{
		"CREATE ROLE skrip LOGIN PASSWORD 'skrip'",
		"CREATE DATABASE skrip OWNER skrip",
	} {
		if err := asPostgres("psql", "-h", data, "-p", strconv.Itoa(PostgresPort), "-U", "postgres",
			"-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql); err != nil {
			return nil, err
		}
	}
	return pg, nil
}

// waitListening waits until the server accepts TCP connections on its address.
func (pg *Postgres) waitListening(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(pg.Host.Addr, strconv.Itoa(PostgresPort))
	for {
		if exited, err := pg.Proc.Exited(); exited {
			return fmt.Errorf("hosts: postgres exited (%v):\n%s", err, pg.Proc.Log(4000))
		}
		var d net.Dialer
		dctx, dcancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		dcancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hosts: postgres not listening on %s within %v:\n%s", addr, timeout, pg.Proc.Log(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
