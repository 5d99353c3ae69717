// Package store owns skrip's metadata in SQL: the connection to SQLite (the embedded
// default) or PostgreSQL, the embedded migrations of each dialect, and one file per
// entity. Every query is written once, with ? placeholders, and runs on both dialects.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors, wrapped with %w by every method.
var (
	// ErrNotFound means no row matched.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique value is taken, or a conditional update lost.
	ErrConflict = errors.New("conflict")
)

// Dialect names the SQL database in use.
type Dialect string

// The two dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

//go:embed migrations
var migrations embed.FS

// Store is the metadata database. Writes go through db; on SQLite that pool has a single
// connection, so writers queue in Go instead of failing with SQLITE_BUSY. Reads use rdb.
type Store struct {
	db      *sql.DB
	rdb     *sql.DB
	dialect Dialect
	where   string // a path or a URL without its password, for messages

	// On SQLite, the prepared statements of db and rdb, by query: the driver prepares
	// each query anew otherwise, which is most of a short statement's CPU time. pgx
	// keeps its own cache of prepared statements per connection.
	wstmts, rstmts stmtCache
}

// stmtCache holds a pool's prepared statements, each prepared on a connection the first
// time it runs there, up to maxCachedStmts queries (every query is a constant, so the
// bound is never reached in practice; past it, queries are prepared each time).
type stmtCache struct {
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // queries first run in a transaction, to prepare after it
	closed  bool
}

const maxCachedStmts = 512

// get returns the statement of q on pool db, preparing it the first time, or nil when
// it is not to be cached (the cache is full or closed, or preparing failed: the caller
// runs q on the pool, which reports the error). It takes a connection of db to prepare:
// never call it in a transaction of db. The lock is not held while preparing, which
// waits for a connection: a transaction holding SQLite's writer connection may be
// calling lookup.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, q string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.stmts[q]
	full := c.closed || len(c.stmts) >= maxCachedStmts
	c.mu.Unlock()
	if ok {
		return st
	}
	if full {
		return nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if other, ok := c.stmts[q]; ok { // prepared meanwhile
		st.Close()
		return other
	}
	if c.closed {
		st.Close()
		return nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[q] = st
	return st
}

// lookup returns the statement of q if it is prepared, and otherwise notes q for
// prepareNoted and returns nil: in a transaction on SQLite's single writer connection,
// preparing on the pool would wait for the transaction's own connection.
func (c *stmtCache) lookup(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[q]; ok {
		return st
	}
	if !c.closed && len(c.stmts)+len(c.pending) < maxCachedStmts {
		if c.pending == nil {
			c.pending = map[string]bool{}
		}
		c.pending[q] = true
	}
	return nil
}

// prepareNoted prepares the queries lookup noted, once the transaction is over.
func (c *stmtCache) prepareNoted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for q := range pending {
		c.get(ctx, db, q)
	}
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var err error
	for _, st := range c.stmts {
		err = errors.Join(err, st.Close())
	}
	c.stmts = nil
	return err
}

// IsPostgresURL reports whether a database URL selects PostgreSQL.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// Open connects to databaseURL when it is a postgres:// URL, or else to the SQLite file
// sqlitePath (created if missing), and applies the pending migrations.
func Open(ctx context.Context, databaseURL, sqlitePath string) (*Store, error) {
	var s *Store
	var err error
	switch {
	case IsPostgresURL(databaseURL):
		s, err = openPostgres(ctx, databaseURL)
	case databaseURL == "":
		s, err = openSQLite(ctx, sqlitePath)
	default:
		return nil, fmt.Errorf("database URL must start with postgres:// (or be empty for SQLite), got %q", redact(databaseURL))
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating the database directory: %w", err)
	}
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	params := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		params.Add("_pragma", p)
	}
	params.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + params.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	rdb, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		db.Close()
		return nil, err
	}
	rdb.SetMaxOpenConns(8)
	rdb.SetMaxIdleConns(8) // keep the connections, and the statements prepared on them
	s := &Store{db: db, rdb: rdb, dialect: SQLite, where: path}
	if err := db.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	return s, nil
}

// privateFiles makes the database file path readable by this user alone (0600), whatever
// the umask: it holds password hashes and token hashes. It creates the file when missing,
// so that SQLite, which gives its -wal and -shm files the mode of the database file, makes
// those 0600 too; and it tightens the files an earlier server left more open.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("checking SQLite database file %s: %w", p, err)
		}
		if info.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("making SQLite database file %s private (0600): %w", p, err)
			}
		}
	}
	return nil
}

func openPostgres(ctx context.Context, databaseURL string) (*Store, error) {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL URL %s: %w", redact(databaseURL), err)
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(10)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, rdb: db, dialect: Postgres, where: redact(databaseURL)}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", s.where, err)
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	dir, err := fs.Sub(migrations, "migrations/"+string(s.dialect))
	if err != nil {
		return err
	}
	var opts []goose.ProviderOption
	dialect := goose.DialectSQLite3
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		// Several servers may start at once against one database: one migrates at a time.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, s.db, dir, opts...)
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrating the %s database %s: %w", s.dialect, s.where, err)
	}
	return nil
}

// Close closes both pools.
func (s *Store) Close() error {
	err := errors.Join(s.wstmts.close(), s.rstmts.close(), s.db.Close())
	if s.rdb != s.db {
		err = errors.Join(err, s.rdb.Close())
	}
	return err
}

// Dialect reports which database is in use.
func (s *Store) Dialect() Dialect { return s.dialect }

// Where describes the database for people: the SQLite path, or the URL without password.
func (s *Store) Where() string { return s.where }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.rdb.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// Version returns the database server's version string.
func (s *Store) Version(ctx context.Context) (string, error) {
	var v string
	q := "SELECT 'SQLite ' || sqlite_version()"
	if s.dialect == Postgres {
		q = "SHOW server_version"
	}
	if err := s.rdb.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return "", err
	}
	if s.dialect == Postgres {
		v = "PostgreSQL " + v
	}
	return v, nil
}

// rebind turns ? placeholders into $1, $2, … for PostgreSQL. Queries never hold a literal
// question mark.
func (s *Store) rebind(q string) string {
	if s.dialect != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := s.stmt(ctx, &s.wstmts, s.db, q); st != nil {
		res, err := st.ExecContext(ctx, args...)
		return res, mapErr(err)
	}
	res, err := s.db.ExecContext(ctx, s.rebind(q), args...)
	return res, mapErr(err)
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.stmt(ctx, &s.rstmts, s.rdb, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.rdb.QueryRowContext(ctx, s.rebind(q), args...)
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.stmt(ctx, &s.rstmts, s.rdb, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.rdb.QueryContext(ctx, s.rebind(q), args...)
}

// stmt returns the cached statement of q on SQLite, or nil: run q on the pool.
func (s *Store) stmt(ctx context.Context, c *stmtCache, db *sql.DB, q string) *sql.Stmt {
	if s.dialect != SQLite {
		return nil
	}
	return c.get(ctx, db, q)
}

// txStmt returns the writer pool's cached statement of q on SQLite, or nil: run q in
// the transaction. A query not prepared yet is prepared after the transaction.
func (s *Store) txStmt(q string) *sql.Stmt {
	if s.dialect != SQLite {
		return nil
	}
	return s.wstmts.lookup(q)
}

// txExec runs q in tx, with the writer pool's cached statement on SQLite.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := s.txStmt(q); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, s.rebind(q), args...)
}

// txQueryRow runs q in tx, with the writer pool's cached statement on SQLite.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := s.txStmt(q); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, s.rebind(q), args...)
}

// tx runs fn in a transaction on the writer pool.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if s.dialect == SQLite {
		defer s.wstmts.prepareNoted(ctx, s.db)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}

// mapErr turns unique-constraint violations into ErrConflict and sql.ErrNoRows into
// ErrNotFound, keeping the driver's text.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", ErrConflict, err)
		}
	}
	return err
}

// redact hides the password of a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// scanAll reads every row of rows with scan and closes rows.
func scanAll[T any](rows *sql.Rows, err error, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ms converts a time to the stored form, Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts a stored Unix millisecond value back to a UTC time.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// Inspect connects without migrating and returns the server's version and the number of
// migrations applied, for `skrip doctor`. A missing SQLite file is reported, not created.
func Inspect(ctx context.Context, databaseURL, sqlitePath string) (version string, applied int, err error) {
	var s *Store
	switch {
	case IsPostgresURL(databaseURL):
		s, err = openPostgres(ctx, databaseURL)
	case databaseURL == "":
		if _, serr := os.Stat(sqlitePath); serr != nil {
			return "", 0, fmt.Errorf("%s does not exist yet; `skrip serve` creates it", sqlitePath)
		}
		s, err = openSQLite(ctx, sqlitePath)
	default:
		return "", 0, fmt.Errorf("database URL must start with postgres:// (or be empty for SQLite), got %q", redact(databaseURL))
	}
	if err != nil {
		return "", 0, err
	}
	defer s.Close()
	if version, err = s.Version(ctx); err != nil {
		return "", 0, err
	}
	// goose's table may not exist yet on a database skrip never migrated.
	s.queryRow(ctx, "SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0 AND is_applied").Scan(&applied)
	return version, applied, nil
}
