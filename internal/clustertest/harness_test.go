package clustertest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/clustertest/hosts"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/natsserver"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

var harnessUsers = []natsserver.User{
	{Name: "api", Password: "api", Kind: natsserver.APIUser},
	{Name: "w1", Password: "w1", Kind: natsserver.WorkerUser, Worker: "w1"},
}

// TestHarness checks the harness itself: three nats-servers in their namespaces form a
// cluster whose R3 stream and R3 Object Store bucket keep working with the stream
// leader killed and with a node cut off; the killed node rejoins after a restart and
// the cut one after healing; a worker's credentials work on the cluster and are refused
// elsewhere; PostgreSQL on its own host is reachable from the root namespace.
func TestHarness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	network := Network(t)
	pg := Postgres(t, network)
	cluster := NATS(t, network, harnessUsers...)

	t.Run("postgres", func(t *testing.T) {
		db, err := sql.Open("pgx", pg.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var who string
		if err := db.QueryRowContext(ctx, "SELECT current_user || '@' || current_database()").Scan(&who); err != nil {
			t.Fatalf("%s: %v", pg.URL(), err)
		}
		if who != "skrip@skrip" {
			t.Errorf("connected as %s, want skrip@skrip", who)
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Errorf("skrip cannot create a table in its database: %v", err)
		}
	})

	// Quick pings: a client of a node that is cut off notices and moves to another.
	nc, err := nats.Connect(cluster.URLs(), nats.UserInfo("api", "api"), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "HARNESS", Subjects: []string{"harness.>"}, Replicas: 3, Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "harness", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("harness!"), 128<<10) // 1 MiB

	// works publishes one message and puts and gets one object, retrying while the
	// cluster elects leaders (4 to 15 s here), for up to 30 s. A retried publish has the
	// same message id, so the stream holds each message once.
	published := 0
	works := func(t *testing.T, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var err error
		for sent := false; time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			if !sent {
				if err = publish(ctx, js, published); err != nil {
					continue
				}
				sent = true
				published++
			}
			if err = roundTrip(ctx, obs, body, published); err == nil {
				return
			}
		}
		t.Fatalf("%s: the cluster does not work within 30 s: %v", what, err)
	}
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }
	works(t, "all nodes up")

	t.Run("leader killed", func(t *testing.T) {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leader := cluster.Node(info.Cluster.Leader)
		if leader == nil {
			t.Fatalf("stream leader %q is no node of the harness", info.Cluster.Leader)
		}
		if err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		step("killed the stream leader " + leader.Name)
		works(t, leader.Name+" killed")
		step("works")
		if err := leader.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		step("restarted and healthy")
		waitReplicasCurrent(t, ctx, stream, 3)
		step("replicas current")
		works(t, leader.Name+" restarted")
	})

	t.Run("node cut off", func(t *testing.T) {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var follower *hosts.NATSNode
		for _, nd := range cluster.Nodes {
			if nd.Name != info.Cluster.Leader {
				follower = nd
			}
		}
		if err := follower.Host.Cut(ctx); err != nil {
			t.Fatal(err)
		}
		// A cut is silent: connecting times out, nothing refuses.
		c, err := net.DialTimeout("tcp", net.JoinHostPort(follower.Host.Addr, fmt.Sprint(hosts.NATSPort)), time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("%s still reachable after Cut", follower.Name)
		} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Errorf("dialling a cut host: %v, want a timeout", err)
		}
		step("cut " + follower.Name + ", connected to " + nc.ConnectedServerName())
		works(t, follower.Name+" cut off")
		step("works")
		if err := follower.Host.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if err := follower.WaitHealthy(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		step("healed and healthy")
		waitReplicasCurrent(t, ctx, stream, 3)
		step("replicas current")
		works(t, follower.Name+" healed")
	})

	t.Run("worker credentials", func(t *testing.T) {
		violations := make(chan error, 8)
		w, err := nats.Connect(cluster.URLs(), nats.UserInfo("w1", "w1"),
			nats.CustomInboxPrefix(natsserver.WorkerInboxPrefix(protocol.Names{}, "w1")),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		sub, err := w.SubscribeSync("skrip.w.w1.>")
		if err != nil {
			t.Fatal(err)
		}
		w.Flush()
		// The subscription's interest crosses the routes in its own time: publish until
		// a message arrives.
		got := false
		for end := time.Now().Add(10 * time.Second); !got && time.Now().Before(end); {
			if err := nc.Publish("skrip.w.w1.cancel", []byte("x")); err != nil {
				t.Fatal(err)
			}
			_, err := sub.NextMsg(200 * time.Millisecond)
			got = err == nil
		}
		if !got {
			t.Error("the worker got no message on its own subject through the cluster within 10 s")
		}
		if _, err := w.SubscribeSync("skrip.api.record"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-violations:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				t.Errorf("subscribing skrip.api.record: %v, want a permissions violation", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("a worker subscribed skrip.api.record without a permissions violation")
		}
	})

	if got := published; got < 5 {
		t.Errorf("published %d messages, want 5", got)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(published) {
		t.Errorf("stream holds %d messages, want %d: one was lost or doubled", info.State.Msgs, published)
	}
}

// publish publishes message i to the stream, with message id i.
func publish(ctx context.Context, js jetstream.JetStream, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := js.Publish(ctx, fmt.Sprintf("harness.%d", i), []byte("m"), jetstream.WithMsgID(fmt.Sprint(i)))
	return err
}

// roundTrip puts, reads back and deletes an object.
func roundTrip(ctx context.Context, obs jetstream.ObjectStore, body []byte, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	name := fmt.Sprintf("o%d", i)
	if _, err := obs.PutBytes(ctx, name, body); err != nil {
		return fmt.Errorf("object put: %w", err)
	}
	got, err := obs.GetBytes(ctx, name)
	if err != nil {
		return fmt.Errorf("object get: %w", err)
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("object get: %d bytes differ from the %d put", len(got), len(body))
	}
	return obs.Delete(ctx, name)
}

// waitReplicasCurrent waits up to 30 s until the stream has a leader and n-1 current,
// online followers.
func waitReplicasCurrent(t *testing.T, ctx context.Context, s jetstream.Stream, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		info, err := s.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
			current := 1
			for _, r := range info.Cluster.Replicas {
				if r.Current && !r.Offline {
					current++
				}
			}
			if current == n {
				return
			}
			last = fmt.Sprintf("leader %s, %d of %d current", info.Cluster.Leader, current, n)
		} else if err != nil {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("stream %s: replicas not current within 30 s (%s)", s.CachedInfo().Config.Name, last)
}

func itoa(i int) string { return fmt.Sprint(i) }

func dial(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
	}
	return err
}
