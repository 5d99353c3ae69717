package natsserver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// Install names the NATS assets of one skrip installation that its users may touch:
// the stream, registry, secret and subjects of its prefix (SKRIP_NATS_PREFIX), and its
// work and files buckets (SKRIP_NATS_WORK_BUCKET, SKRIP_NATS_BUCKET). Several
// installations may share one NATS account: each worker's permissions name only its
// own installation's assets.
type Install struct {
	Names       protocol.Names
	WorkBucket  string
	FilesBucket string
}

// Kind is the role a NATS user plays in a cluster.
type Kind string

// The two kinds of users: API nodes may do everything, a worker only its own work.
const (
	APIUser    Kind = "api"
	WorkerUser Kind = "worker"
)

// User is one entry of a nats-server authorization block.
type User struct {
	Name     string
	Password string
	Kind     Kind
	Worker   string // the worker id, for a WorkerUser
}

// WorkerInboxPrefix is the inbox prefix a worker must dial with
// (nats.CustomInboxPrefix): its user may subscribe to replies only under it, so that it
// cannot read the replies other users get (an API node's direct gets of the files
// bucket, say). "w-" cannot start a nuid, so it never meets another client's inbox. A
// prefixed installation's workers have theirs under "_INBOX.p-<prefix>.", a token that
// neither a nuid nor another installation's inbox starts with, so that workers of one id
// in two installations on one account never read each other's replies.
func WorkerInboxPrefix(n protocol.Names, worker string) string {
	if n.Prefix() == "" {
		return "_INBOX.w-" + worker
	}
	return "_INBOX.p-" + n.Prefix() + ".w-" + worker
}

// Permissions returns the subject permissions of a user of kind: nil (everything) for
// an API node, and for a worker exactly what it needs and nothing more. A worker may
//   - fetch from the runs consumer and acknowledge its messages;
//   - ask API nodes to claim, record and renew its runs, and publish output lines;
//   - write its own heartbeat and read the others';
//   - read objects of the work bucket (runs' files, sealed: it opens those of the runs
//     it claims);
//   - read and write objects of its own bucket (WorkerBucket), where it leaves its
//     reports and artifacts and its sandboxes' files come and go;
//   - answer requests sent to its own subjects (skrip.w.<id>.>, under its installation's
//     prefix if it has one): it may publish on a
//     request's reply (allow_responses), on no other inbox.
//
// It may not touch the files bucket, the sealing secret, status events, other workers'
// subjects, keys or buckets, write the work bucket, or use any other JetStream API; nor
// anything of another installation on the same NATS account (another prefix: every name
// above is its installation's, token for token). Each subject is one that nats.go
// (v1.55) sends for the calls workers make: KeyValue Put, Get and Watch; ObjectStore
// Put, Get, GetInfo, List and Delete (push ordered consumers with flow control); and
// skrip's natsblob (pull ordered consumers, direct gets, purges).
func Permissions(kind Kind, worker string, in Install) (*server.Permissions, error) {
	switch kind {
	case APIUser:
		return nil, nil
	case WorkerUser:
	default:
		return nil, fmt.Errorf("natsserver: unknown kind of user %q", kind)
	}
	n, workBucket, filesBucket := in.Names, in.WorkBucket, in.FilesBucket
	for _, tok := range []struct{ what, v string }{
		{"worker id", worker}, {"work bucket", workBucket}, {"files bucket", filesBucket},
	} {
		if err := checkToken(tok.v); err != nil {
			return nil, fmt.Errorf("natsserver: %s %q: %w", tok.what, tok.v, err)
		}
	}
	if strings.Trim(worker, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return nil, fmt.Errorf(`natsserver: worker id %q: it names the worker's bucket, so it may hold only letters, digits, "-" and "_"`, worker)
	}
	if workBucket == filesBucket {
		return nil, errors.New("natsserver: the work bucket and the files bucket must differ")
	}
	work := "OBJ_" + workBucket
	ownBucket := protocol.WorkerBucket(workBucket, worker)
	own := "OBJ_" + ownBucket
	kv := "KV_" + n.Registry()
	runs, consumer := n.Stream(), protocol.Consumer
	api := "$JS.API."
	pub := []string{
		api + "INFO",
		// The runs queue: fetch one message at a time and acknowledge it.
		api + "CONSUMER.INFO." + runs + "." + consumer,
		api + "CONSUMER.MSG.NEXT." + runs + "." + consumer,
		"$JS.ACK." + runs + "." + consumer + ".>",
		// API nodes' queue group and the run's output lines.
		n.ClaimSubject(worker), n.RecordSubject(worker), n.LeaseSubject(worker),
		n.OutSubject(worker, "*"),
		// Its own heartbeat; reading the others' (Get, Watch) for `skrip doctor`. Reads
		// are direct gets; STREAM.MSG.GET is their fallback on a stream without
		// allow_direct. A watch is a push ordered consumer with flow control.
		"$KV." + n.Registry() + "." + worker,
		api + "STREAM.INFO." + kv,
		api + "DIRECT.GET." + kv + ".>",
		api + "STREAM.MSG.GET." + kv,
		api + "CONSUMER.CREATE." + kv + ".>",
		api + "CONSUMER.DELETE." + kv + ".*",
		"$JS.FC." + kv + ".>",
		// The work bucket, read only: its stream's API. nats.go's Get is a push ordered
		// consumer with flow control, natsblob's a pull ordered consumer.
		api + "STREAM.INFO." + work,
		api + "DIRECT.GET." + work + ".>",
		api + "STREAM.MSG.GET." + work,
		api + "CONSUMER.CREATE." + work + ".>",
		api + "CONSUMER.DELETE." + work + ".*",
		api + "CONSUMER.MSG.NEXT." + work + ".*",
		"$JS.FC." + work + ".>",
		// Its own bucket: its subjects and its stream's API, to read and write. Delete
		// purges the object's chunks; natsblob deletes chunks of a failed Put by
		// sequence. It is an API node's to make.
		"$O." + ownBucket + ".>",
		api + "STREAM.INFO." + own,
		api + "DIRECT.GET." + own + ".>",
		api + "STREAM.MSG.GET." + own,
		api + "STREAM.MSG.DELETE." + own,
		api + "STREAM.PURGE." + own,
		api + "CONSUMER.CREATE." + own + ".>",
		api + "CONSUMER.DELETE." + own + ".*",
		api + "CONSUMER.MSG.NEXT." + own + ".*",
		"$JS.FC." + own + ".>",
		// Replies to API nodes' requests are Response below: a worker may answer a
		// request it received and publish on no other inbox.
	}
	files := "OBJ_" + filesBucket
	keys := "KV_" + n.Keys()
	// Nothing above allows these; denying them as well keeps it so if an allow is ever
	// widened.
	denyPub := []string{
		"$O." + filesBucket + ".>",
		api + "*.*." + files,
		api + "*.*." + files + ".>",
		api + "*.*.*." + files,
		api + "*.*.*." + files + ".>",
		"$JS.FC." + files + ".>",
		"$KV." + n.Keys() + ".>",
		api + "*.*." + keys,
		api + "*.*." + keys + ".>",
		api + "*.*.*." + keys,
		api + "*.*.*." + keys + ".>",
		// Writing the work bucket: only API nodes put runs' files there.
		"$O." + workBucket + ".>",
		api + "STREAM.MSG.DELETE." + work,
		api + "STREAM.PURGE." + work,
	}
	sub := []string{
		WorkerInboxPrefix(n, worker) + ".>",
		n.WorkerSubjects(worker),
	}
	denySub := []string{
		n.APIs(),
		n.StatusSubject(">"),
		"$O." + filesBucket + ".>",
		"$O." + workBucket + ".>",
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub, Deny: denyPub},
		Subscribe: &server.SubjectPermission{Allow: sub, Deny: denySub},
		// Any number of messages on a request's reply (a sandbox exec streams its lines
		// there before the answer), for as long as the longest exec may run.
		Response: &server.ResponsePermission{MaxMsgs: -1, Expires: ResponseExpires},
	}, nil
}

// ResponseExpires is how long a worker may answer a request it received: longer than
// any sandbox exec or transfer an API node waits for.
const ResponseExpires = 24 * time.Hour

// checkToken refuses a name that is not one subject token.
func checkToken(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if strings.ContainsAny(s, ".*> \t\r\n\"'{}[]#;,=$") {
		return errors.New(`it must be one subject token (no ".", "*", ">", spaces or quotes)`)
	}
	return nil
}

// Users returns the permissions of each user as nats-server's own type, for an
// embedded server (server.Options.Users).
func Users(users []User, in Install) ([]*server.User, error) {
	out := make([]*server.User, 0, len(users))
	for _, u := range users {
		p, err := Permissions(u.Kind, u.Worker, in)
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", u.Name, err)
		}
		out = append(out, &server.User{Username: u.Name, Password: u.Password, Permissions: p})
	}
	return out, nil
}

// AuthorizationConfig renders users as the authorization block of a nats-server config
// file; docs/cluster.md prints one. The server parses it into the same permissions
// Users returns.
func AuthorizationConfig(users []User, in Install) (string, error) {
	su, err := Users(users, in)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("authorization {\n  users: [\n")
	for _, u := range su {
		fmt.Fprintf(&b, "    { user: %s, password: %s", strconv.Quote(u.Username), strconv.Quote(u.Password))
		if p := u.Permissions; p != nil {
			b.WriteString(", permissions: {\n")
			writeRule(&b, "publish", p.Publish)
			writeRule(&b, "subscribe", p.Subscribe)
			if r := p.Response; r != nil {
				fmt.Fprintf(&b, "      allow_responses: { max: %d, expires: %q }\n", r.MaxMsgs, r.Expires.String())
			}
			b.WriteString("    }")
		}
		b.WriteString(" }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

func writeRule(b *strings.Builder, name string, r *server.SubjectPermission) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "      %s: {\n", name)
	for _, l := range []struct {
		key  string
		subs []string
	}{{"allow", r.Allow}, {"deny", r.Deny}} {
		if len(l.subs) == 0 {
			continue
		}
		fmt.Fprintf(b, "        %s: [\n", l.key)
		for _, s := range l.subs {
			fmt.Fprintf(b, "          %s\n", strconv.Quote(s))
		}
		b.WriteString("        ]\n")
	}
	b.WriteString("      }\n")
}
