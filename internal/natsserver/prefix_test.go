package natsserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// TestWorkersConfinedToTheirInstallation: two installations share one NATS account,
// one without a prefix and one with SKRIP_NATS_PREFIX=b, each with a worker called w1.
// Each worker does its work in its own installation, and the server refuses it every
// asset and subject of the other: its queue, its API nodes, its registry, its buckets,
// its secret and its workers' subjects.
func TestWorkersConfinedToTheirInstallation(t *testing.T) {
	b, err := protocol.NewNames("b")
	if err != nil {
		t.Fatal(err)
	}
	installs := map[string]Install{
		"a": {WorkBucket: "skrip-work", FilesBucket: "skrip-files"},
		"b": {Names: b, WorkBucket: b.Bucket("skrip-work"), FilesBucket: b.Bucket("skrip-files")},
	}
	users := []*server.User{{Username: "api", Password: "api-secret"}}
	for name, in := range installs {
		u, err := Users([]User{{Name: name + "-w1", Password: "secret", Kind: WorkerUser, Worker: "w1"}}, in)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u...)
	}
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), Users: users, NoSigs: true, NoLog: true}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api, err := nats.Connect(srv.ClientURL(), nats.UserInfo("api", "api-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ajs, _ := jetstream.New(api)
	// Each installation's assets, as its API nodes make them; its API nodes answer
	// their workers with the installation's name.
	for name, in := range installs {
		n := in.Names
		s, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: n.Stream(), Subjects: []string{n.JobSubjects()}, Retention: jetstream.WorkQueuePolicy})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: protocol.Consumer, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		for _, kv := range []string{n.Registry(), n.Keys()} {
			if _, err := ajs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: kv}); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range []string{in.WorkBucket, in.FilesBucket, protocol.WorkerBucket(in.WorkBucket, "w1")} {
			if _, err := ajs.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: o}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ajs.Publish(ctx, n.JobSubject("r1"), []byte(name)); err != nil {
			t.Fatal(err)
		}
		answer := []byte(name)
		sub, err := api.QueueSubscribe(n.APIs(), protocol.APIQueue, func(m *nats.Msg) { m.Respond(answer) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	api.Flush()

	for name, own := range installs {
		other := installs["b"]
		if name == "b" {
			other = installs["a"]
		}
		t.Run(name, func(t *testing.T) {
			violations := make(chan error, 64)
			w, err := nats.Connect(srv.ClientURL(), nats.UserInfo(name+"-w1", "secret"), nats.CustomInboxPrefix(WorkerInboxPrefix(own.Names, "w1")),
				nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
					select {
					case violations <- err:
					default:
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			wjs, _ := jetstream.New(w)
			n := own.Names

			// Its own installation's work.
			cons, err := wjs.Consumer(ctx, n.Stream(), protocol.Consumer)
			if err != nil {
				t.Fatalf("opening its queue %s: %v", n.Stream(), err)
			}
			msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil || string(msg.Data()) != name {
				t.Fatalf("fetching from its queue: %v", err)
			}
			if rep, err := w.Request(n.ClaimSubject("w1"), []byte("{}"), 5*time.Second); err != nil || string(rep.Data) != name {
				t.Fatalf("claiming from its API nodes: %v", err)
			}
			kv, err := wjs.KeyValue(ctx, n.Registry())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(ctx, "w1", []byte("alive")); err != nil {
				t.Fatalf("its heartbeat: %v", err)
			}
			if _, err := wjs.ObjectStore(ctx, own.WorkBucket); err != nil {
				t.Fatalf("opening its work bucket: %v", err)
			}
			if _, err := wjs.ObjectStore(ctx, protocol.WorkerBucket(own.WorkBucket, "w1")); err != nil {
				t.Fatalf("opening its own bucket: %v", err)
			}
			if _, err := w.SubscribeSync(n.WorkerSubjects("w1")); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			select {
			case err := <-violations:
				t.Fatalf("its own installation's work caused a permissions violation: %v", err)
			default:
			}

			// Nothing of the other installation's, though its worker has the same id.
			o := other.Names
			api := "$JS.API."
			refused := []struct{ subject, pub, sub string }{
				{subject: api + "CONSUMER.INFO." + o.Stream() + ".workers", pub: api + "CONSUMER.INFO." + o.Stream() + ".workers"},
				{subject: api + "CONSUMER.MSG.NEXT." + o.Stream() + ".workers", pub: api + "CONSUMER.MSG.NEXT." + o.Stream() + ".workers"},
				{subject: o.ClaimSubject("w1"), pub: o.ClaimSubject("w1")},
				{subject: o.RecordSubject("w1"), pub: o.RecordSubject("w1")},
				{subject: o.LeaseSubject("w1"), pub: o.LeaseSubject("w1")},
				{subject: o.OutSubject("w1", "r1"), pub: o.OutSubject("w1", "r1")},
				{subject: "$KV." + o.Registry() + ".w1", pub: "$KV." + o.Registry() + ".w1"},
				{subject: api + "STREAM.INFO.KV_" + o.Registry(), pub: api + "STREAM.INFO.KV_" + o.Registry()},
				{subject: api + "STREAM.INFO.KV_" + o.Keys(), pub: api + "STREAM.INFO.KV_" + o.Keys()},
				{subject: api + "STREAM.INFO.OBJ_" + other.WorkBucket, pub: api + "STREAM.INFO.OBJ_" + other.WorkBucket},
				{subject: "$O." + protocol.WorkerBucket(other.WorkBucket, "w1") + ".M.x", pub: "$O." + protocol.WorkerBucket(other.WorkBucket, "w1") + ".M.x"},
				{subject: api + "STREAM.INFO.OBJ_" + other.FilesBucket, pub: api + "STREAM.INFO.OBJ_" + other.FilesBucket},
				{subject: o.WorkerSubjects("w1"), sub: o.WorkerSubjects("w1")},
				{subject: o.StatusSubject(">"), sub: o.StatusSubject(">")},
				{subject: o.JobSubjects(), sub: o.JobSubjects()},
				// The other's worker of the same id gets its replies (claims, fetched jobs,
				// work bucket chunks) under its inbox: this one may not read them.
				{subject: WorkerInboxPrefix(o, "w1") + ".>", sub: WorkerInboxPrefix(o, "w1") + ".>"},
			}
			for _, c := range refused {
				for len(violations) > 0 {
					<-violations
				}
				if c.pub != "" {
					w.Publish(c.pub, []byte("{}"))
				} else {
					w.SubscribeSync(c.sub)
				}
				w.Flush()
				deadline := time.After(5 * time.Second)
			wait:
				for {
					select {
					case err := <-violations:
						if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), `"`+c.subject+`"`) {
							break wait
						}
					case <-deadline:
						t.Errorf("the worker of installation %s reached %s of the other's: no permissions violation", name, c.subject)
						break wait
					}
				}
			}
		})
	}
}
