package natsserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

const (
	workBucket  = "skrip-work"
	filesBucket = "skrip-files"
)

// testInstall is an installation without a prefix, as every one was before
// SKRIP_NATS_PREFIX.
var testInstall = Install{WorkBucket: workBucket, FilesBucket: filesBucket}

var testUsers = []User{
	{Name: "api", Password: "api-secret", Kind: APIUser},
	{Name: "w1", Password: "w1-secret", Kind: WorkerUser, Worker: "w1"},
}

func TestPermissionsRefusesBadNames(t *testing.T) {
	for _, c := range []struct{ kind, worker, work, files string }{
		{"worker", "", workBucket, filesBucket},
		{"worker", "w.1", workBucket, filesBucket},
		{"worker", "w*", workBucket, filesBucket},
		{"worker", "w/1", workBucket, filesBucket}, // it names a bucket
		{"worker", "w@1", workBucket, filesBucket},
		{"worker", "w1", "a>", filesBucket},
		{"worker", "w1", workBucket, workBucket},
		{"admin", "w1", workBucket, filesBucket},
	} {
		if _, err := Permissions(Kind(c.kind), c.worker, Install{WorkBucket: c.work, FilesBucket: c.files}); err == nil {
			t.Errorf("Permissions(%q, %q, %q, %q) = nil error", c.kind, c.worker, c.work, c.files)
		}
	}
}

// startAuthServer runs an embedded server from a config file holding
// AuthorizationConfig's text, so the test checks the rendered text as the server reads
// it, and that it means what Users says.
func startAuthServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	auth, err := AuthorizationConfig(testUsers, testInstall)
	if err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("listen: \"127.0.0.1:-1\"\njetstream { store_dir: %q }\n%s", filepath.Join(dir, "js"), auth)
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the rendered config: %v\n%s", err, conf)
	}
	want, err := Users(testUsers, testInstall)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range opts.Users {
		if !reflect.DeepEqual(u.Permissions, want[i].Permissions) {
			t.Errorf("user %s: config text parses to %+v, want %+v", u.Username, u.Permissions, want[i].Permissions)
		}
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return srv.ClientURL()
}

// TestWorkerCredentialsRefused checks a worker's NATS user: everything a worker does
// works (through the very nats.go and natsblob calls it makes), and what would let a
// compromised worker read users' files, impersonate an API node or another worker is
// refused by the server with a permissions violation.
func TestWorkerCredentialsRefused(t *testing.T) {
	url := startAuthServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The API user sets up what dispatch will: the runs queue, the buckets, the KV.
	api, err := nats.Connect(url, nats.UserInfo("api", "api-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ajs, err := jetstream.New(api)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ajs.CreateStream(ctx, jetstream.StreamConfig{
		Name: protocol.Names{}.Stream(), Subjects: []string{"skrip.jobs.>"}, Retention: jetstream.WorkQueuePolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: protocol.Consumer, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 2,
	}); err != nil {
		t.Fatal(err)
	}
	akv, err := ajs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: protocol.Names{}.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := akv.Put(ctx, "w2", []byte("alive")); err != nil {
		t.Fatal(err)
	}
	// The buckets API nodes make: the files, the shared work bucket, each worker's own,
	// and the sealing secret's KV.
	for _, b := range []string{workBucket, filesBucket, protocol.WorkerBucket(workBucket, "w1"), protocol.WorkerBucket(workBucket, "w2")} {
		obs, err := ajs.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obs.PutBytes(ctx, "files/secret", []byte("a user's file")); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: several chunks
	apiWork, err := natsblob.New(ctx, api, natsblob.Config{Bucket: workBucket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apiWork.Put(ctx, "work/sealed/x", bytes.NewReader(big), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	keys, err := ajs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: protocol.Names{}.Keys()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Put(ctx, "inputs", []byte("the API nodes' secret")); err != nil {
		t.Fatal(err)
	}
	claims, err := api.QueueSubscribe("skrip.api.>", "api", func(m *nats.Msg) { m.Respond([]byte("go")) })
	if err != nil {
		t.Fatal(err)
	}
	defer claims.Unsubscribe()
	out, err := api.SubscribeSync("skrip.out.>")
	if err != nil {
		t.Fatal(err)
	}
	api.Flush()

	violations := make(chan error, 64)
	w, err := nats.Connect(url, nats.UserInfo("w1", "w1-secret"),
		nats.CustomInboxPrefix(WorkerInboxPrefix(protocol.Names{}, "w1")),
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
	wjs, err := jetstream.New(w)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("allowed", func(t *testing.T) {
		step := func(name string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		// The runs queue: fetch and acknowledge.
		_, err := ajs.Publish(ctx, "skrip.jobs.r1", []byte("job"), jetstream.WithMsgID("r1"))
		step("publish a job (api)", err)
		cons, err := wjs.Consumer(ctx, protocol.Names{}.Stream(), protocol.Consumer)
		step("open the workers consumer", err)
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		step("fetch a job", err)
		step("progress", msg.InProgress())
		step("ack", msg.DoubleAck(ctx))

		// Claim, record and lease through the API queue group, and an output line.
		for _, subj := range []string{"skrip.api.claim.w1", "skrip.api.record.w1", "skrip.api.lease.w1"} {
			reply, err := w.Request(subj, []byte("{}"), 5*time.Second)
			step(subj, err)
			if string(reply.Data) != "go" {
				t.Errorf("%s reply = %q", subj, reply.Data)
			}
		}
		step("output line", w.Publish("skrip.out.w1.r1", []byte("line")))
		_, err = out.NextMsg(5 * time.Second)
		step("api receives the output line", err)

		// Requests to the worker's own subjects.
		// A sandbox exec's answer comes after its lines, all on the request's reply.
		sbs, err := w.Subscribe("skrip.w.w1.>", func(m *nats.Msg) {
			for _, l := range []string{"line 1", "line 2", "ok"} {
				w.Publish(m.Reply, []byte(l))
			}
		})
		step("serve skrip.w.w1.>", err)
		defer sbs.Unsubscribe()
		w.Flush()
		inbox := api.NewInbox()
		answers, err := api.SubscribeSync(inbox)
		step("subscribe the api's inbox", err)
		step("api asks the worker", api.PublishRequest("skrip.w.w1.sb.exec", inbox, []byte("{}")))
		for i := range 3 {
			_, err = answers.NextMsg(5 * time.Second)
			step(fmt.Sprintf("the worker's answer %d of 3", i+1), err)
		}
		answers.Unsubscribe()

		// Its heartbeat, and reading the others'.
		kv, err := wjs.KeyValue(ctx, protocol.Names{}.Registry())
		step("open the workers KV", err)
		_, err = kv.Put(ctx, "w1", []byte("alive"))
		step("heartbeat", err)
		_, err = kv.Get(ctx, "w2")
		step("read another worker's heartbeat", err)
		watch, err := kv.WatchAll(ctx)
		step("watch heartbeats", err)
		seen := 0
		for e := range watch.Updates() {
			if e == nil {
				break
			}
			seen++
		}
		step("stop watching", watch.Stop())
		if seen != 2 {
			t.Errorf("watch saw %d heartbeats, want 2", seen)
		}

		// The work bucket, read only, through nats.go's Object Store and skrip's natsblob.
		wobs, err := wjs.ObjectStore(ctx, workBucket)
		step("open the work bucket", err)
		got, err := wobs.GetBytes(ctx, "work/sealed/x")
		step("object get from the work bucket", err)
		if !bytes.Equal(got, big) {
			t.Errorf("object get returned %d bytes, want %d", len(got), len(big))
		}
		_, err = wobs.GetInfo(ctx, "work/sealed/x")
		step("object info in the work bucket", err)
		work, err := natsblob.New(ctx, w, natsblob.Config{Bucket: workBucket})
		step("natsblob on the work bucket", err)
		rc, _, err := work.Get(ctx, "work/sealed/x", 0, -1)
		step("natsblob get from the work bucket", err)
		got, err = io.ReadAll(rc)
		rc.Close()
		step("natsblob read from the work bucket", err)
		if !bytes.Equal(got, big) {
			t.Errorf("natsblob get returned %d bytes, want %d", len(got), len(big))
		}
		_, err = work.Stat(ctx, "work/sealed/x")
		step("natsblob stat in the work bucket", err)

		// Its own bucket, read and write, through nats.go's Object Store.
		obs, err := wjs.ObjectStore(ctx, protocol.WorkerBucket(workBucket, "w1"))
		step("open its own bucket", err)
		_, err = obs.PutBytes(ctx, "work/runs/r1/a1/result.json", big)
		step("object put", err)
		got, err = obs.GetBytes(ctx, "work/runs/r1/a1/result.json")
		step("object get", err)
		if !bytes.Equal(got, big) {
			t.Errorf("object get returned %d bytes, want %d", len(got), len(big))
		}
		_, err = obs.GetInfo(ctx, "work/runs/r1/a1/result.json")
		step("object info", err)
		_, err = obs.List(ctx)
		step("object list", err)
		step("object delete", obs.Delete(ctx, "work/runs/r1/a1/result.json"))

		// Its own bucket through skrip's natsblob, which workers use, opened beside the
		// work bucket as a worker does.
		store, err := work.Sibling(ctx, protocol.WorkerBucket(workBucket, "w1"), time.Hour)
		step("natsblob on its own bucket", err)
		_, err = store.Put(ctx, "runs/r1/a1/out", bytes.NewReader(big), blob.PutOptions{})
		step("natsblob put", err)
		rc, _, err = store.Get(ctx, "runs/r1/a1/out", 0, -1)
		step("natsblob get", err)
		got, err = io.ReadAll(rc)
		rc.Close()
		step("natsblob read", err)
		if !bytes.Equal(got, big) {
			t.Errorf("natsblob get returned %d bytes, want %d", len(got), len(big))
		}
		_, err = store.Stat(ctx, "runs/r1/a1/out")
		step("natsblob stat", err)
		_, err = store.List(ctx, "runs/")
		step("natsblob list", err)
		step("natsblob delete", store.Delete(ctx, "runs/r1/a1/out"))

		select {
		case err := <-violations:
			t.Errorf("an allowed step caused a permissions violation: %v", err)
		default:
		}
	})

	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
	refused := []struct {
		name    string
		subject string // named in the server's violation
		op      func() error
	}{
		{"open the files bucket", "$JS.API.STREAM.INFO.OBJ_" + filesBucket, func() error {
			c, cancel := short()
			defer cancel()
			_, err := wjs.ObjectStore(c, filesBucket)
			return err
		}},
		{"direct get from the files bucket", "$JS.API.DIRECT.GET.OBJ_" + filesBucket, func() error {
			_, err := w.Request("$JS.API.DIRECT.GET.OBJ_"+filesBucket+".$O."+filesBucket+".M.x", nil, time.Second)
			return err
		}},
		{"read the files bucket's chunks", "$O." + filesBucket + ".>", func() error {
			_, err := w.SubscribeSync("$O." + filesBucket + ".>")
			return err
		}},
		{"subscribe skrip.api.record", "skrip.api.record", func() error {
			_, err := w.SubscribeSync("skrip.api.record")
			return err
		}},
		{"subscribe skrip.st.>", "skrip.st.>", func() error {
			_, err := w.SubscribeSync("skrip.st.>")
			return err
		}},
		{"subscribe skrip.w.other.>", "skrip.w.other.>", func() error {
			_, err := w.SubscribeSync("skrip.w.other.>")
			return err
		}},
		{"read every inbox", "_INBOX.>", func() error {
			_, err := w.SubscribeSync("_INBOX.>")
			return err
		}},
		// An API node's inbox it got no request on: a forged answer to the node's read of
		// the stream or of the sealing secret.
		{"publish on an inbox it was not asked on", "_INBOX.api", func() error {
			return w.Publish("_INBOX.api.forged", []byte("{}"))
		}},
		{"put another worker's heartbeat", "$KV." + protocol.Names{}.Registry() + ".other", func() error {
			kv, err := wjs.KeyValue(ctx, protocol.Names{}.Registry())
			if err != nil {
				return err
			}
			c, cancel := short()
			defer cancel()
			_, err = kv.Put(c, "other", []byte("forged"))
			return err
		}},
		{"claim a run as another worker", "skrip.api.claim.other", func() error {
			return w.Publish("skrip.api.claim.other", []byte("{}"))
		}},
		{"record a run as another worker", "skrip.api.record.other", func() error {
			return w.Publish("skrip.api.record.other", []byte("{}"))
		}},
		{"print lines as another worker", "skrip.out.other.r1", func() error {
			return w.Publish("skrip.out.other.r1", []byte("line"))
		}},
		{"queue a run", "skrip.jobs.forged", func() error {
			return w.Publish("skrip.jobs.forged", []byte("job"))
		}},
		{"delete the work bucket", "$JS.API.STREAM.DELETE.OBJ_" + workBucket, func() error {
			_, err := w.Request("$JS.API.STREAM.DELETE.OBJ_"+workBucket, nil, time.Second)
			return err
		}},
		// The shared work bucket holds runs' sealed files, which only API nodes write: a
		// worker could otherwise replace another run's input (the worker that opens it
		// would refuse it, but the run would fail).
		{"write the work bucket", "$O." + workBucket + ".", func() error {
			c, cancel := short()
			defer cancel()
			obs, err := wjs.ObjectStore(c, workBucket)
			if err != nil {
				return err
			}
			_, err = obs.PutBytes(c, "work/sealed/x", []byte("forged"))
			return err
		}},
		{"write the work bucket through natsblob", "$O." + workBucket + ".", func() error {
			store, err := natsblob.New(ctx, w, natsblob.Config{Bucket: workBucket, Timeout: time.Second})
			if err != nil {
				return err
			}
			_, err = store.Put(ctx, "work/sealed/x", strings.NewReader("forged"), blob.PutOptions{})
			return err
		}},
		{"delete from the work bucket", "$JS.API.STREAM.PURGE.OBJ_" + workBucket, func() error {
			_, err := w.Request("$JS.API.STREAM.PURGE.OBJ_"+workBucket, []byte(`{"filter":"$O.`+workBucket+`.C.x"}`), time.Second)
			return err
		}},
		// Another worker's bucket: its reports, artifacts and sandboxes' files.
		{"open another worker's bucket", "$JS.API.STREAM.INFO.OBJ_" + protocol.WorkerBucket(workBucket, "w2"), func() error {
			c, cancel := short()
			defer cancel()
			_, err := wjs.ObjectStore(c, protocol.WorkerBucket(workBucket, "w2"))
			return err
		}},
		{"read another worker's objects", "$JS.API.DIRECT.GET.OBJ_" + protocol.WorkerBucket(workBucket, "w2"), func() error {
			o := protocol.WorkerBucket(workBucket, "w2")
			_, err := w.Request("$JS.API.DIRECT.GET.OBJ_"+o+".$O."+o+".M.x", nil, time.Second)
			return err
		}},
		{"overwrite another worker's report", "$O." + protocol.WorkerBucket(workBucket, "w2") + ".M.", func() error {
			o := protocol.WorkerBucket(workBucket, "w2")
			return w.Publish("$O."+o+".M.d29yay9ydW5zL3IxL2ExL3JlcG9ydC5qc29u", []byte(`{"name":"work/runs/r1/a1/report.json"}`))
		}},
		{"make its own bucket", "$JS.API.STREAM.CREATE.OBJ_" + protocol.WorkerBucket(workBucket, "w1"), func() error {
			_, err := w.Request("$JS.API.STREAM.CREATE.OBJ_"+protocol.WorkerBucket(workBucket, "w1"), []byte("{}"), time.Second)
			return err
		}},
		// The API nodes' secret, from which every run file's key comes.
		{"open the sealing secret's bucket", "$JS.API.STREAM.INFO.KV_" + protocol.Names{}.Keys(), func() error {
			c, cancel := short()
			defer cancel()
			_, err := wjs.KeyValue(c, protocol.Names{}.Keys())
			return err
		}},
		{"read the sealing secret", "$JS.API.DIRECT.GET.KV_" + protocol.Names{}.Keys(), func() error {
			_, err := w.Request("$JS.API.DIRECT.GET.KV_"+protocol.Names{}.Keys()+".$KV."+protocol.Names{}.Keys()+".inputs", nil, time.Second)
			return err
		}},
	}
	for _, c := range refused {
		t.Run("refused/"+c.name, func(t *testing.T) {
			for len(violations) > 0 {
				<-violations
			}
			c.op() // a refused request times out; the violation comes asynchronously
			deadline := time.After(3 * time.Second)
			for {
				select {
				case err := <-violations:
					if strings.Contains(strings.ToLower(err.Error()), "permissions violation") &&
						strings.Contains(err.Error(), `"`+c.subject) {
						return
					}
				case <-deadline:
					t.Fatalf("no permissions violation naming %q", c.subject)
				}
			}
		})
	}
}

// TestWorkerCannotDeliverAsAnother: an API node takes who asks from the subject
// (skrip.api.record.<worker>), so no worker may make a message reach a handler on
// another worker's subjects. A worker may create consumers on the streams it reads and
// send requests to their API, and nats-server checks neither a push consumer's deliver
// subject nor a request's reply subject against the worker's publish permissions: the
// server publishes the worker's own bytes (an object it put in its own bucket) on any
// subject it names. The permissions cannot stop that short of taking away every read;
// what stops it is protocol.Subscribe, through which every handler of API nodes and
// workers subscribes: what the server so sends always looks like JetStream's, and is
// dropped. The plain subscriber shows each way arrives; the guarded one gets none.
func TestWorkerCannotDeliverAsAnother(t *testing.T) {
	url := startAuthServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	api, err := nats.Connect(url, nats.UserInfo("api", "api-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ajs, _ := jetstream.New(api)
	own := protocol.WorkerBucket(workBucket, "w1")
	if _, err := ajs.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: own}); err != nil {
		t.Fatal(err)
	}
	targets := []struct {
		subject string
		request bool
	}{
		{"skrip.api.record.w2", true}, {"skrip.w.w2.cancel", true}, {"skrip.w.w2.sb.exec", true},
		{"skrip.out.w2.r1", false}, {"skrip.st.r1", false},
	}
	raw := make([]*nats.Subscription, len(targets))
	guarded := make(chan string, 64)
	for i, tg := range targets {
		if raw[i], err = api.SubscribeSync(tg.subject); err != nil {
			t.Fatal(err)
		}
		sub, err := protocol.Subscribe(api, tg.subject, "", tg.request, func(m *nats.Msg) {
			select {
			case guarded <- fmt.Sprintf("%s: %q (reply %q, header %v)", m.Subject, m.Data, m.Reply, m.Header):
			default:
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	api.Flush()

	w, err := nats.Connect(url, nats.UserInfo("w1", "w1-secret"), nats.CustomInboxPrefix(WorkerInboxPrefix(protocol.Names{}, "w1")))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wjs, _ := jetstream.New(w)
	obs, err := wjs.ObjectStore(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"run":"r_of_w2","attempt":1,"worker":"w2","report_key":"work/runs/r_of_w2/a1/report.json"}`
	info, err := obs.PutBytes(ctx, "forged", []byte(forged))
	if err != nil {
		t.Fatal(err)
	}
	chunks := "$O." + own + ".C." + info.NUID
	// A pull consumer of its own bucket, whose messages go to the reply of a fetch.
	pull := `{"stream_name":"OBJ_` + own + `","config":{"name":"pull","ack_policy":"none","filter_subject":"` + chunks + `"}}`
	if _, err := w.Request("$JS.API.CONSUMER.CREATE.OBJ_"+own+".pull", []byte(pull), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, tg := range targets {
		// A push consumer delivering on the target.
		name := fmt.Sprintf("evil%d", i)
		req := fmt.Sprintf(`{"stream_name":"OBJ_%s","config":{"name":"%s","deliver_subject":"%s","ack_policy":"none","filter_subject":"%s"}}`,
			own, name, tg.subject, chunks)
		w.Request("$JS.API.CONSUMER.CREATE.OBJ_"+own+"."+name, []byte(req), 2*time.Second)
		// A direct get answered on the target.
		w.PublishRequest("$JS.API.DIRECT.GET.OBJ_"+own+"."+chunks, tg.subject, nil)
		// A fetch whose message goes to the target.
		w.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.OBJ_"+own+".pull", tg.subject, []byte(`{"batch":1,"no_wait":true}`))
		// A put of its own heartbeat, whose PubAck goes to the target: no request (it has
		// no reply), and no bytes of the worker's (a handler of messages checks what it
		// reads: dispatch's TestForgedDeliveriesDropped).
		if tg.request {
			w.PublishRequest("$KV."+protocol.Names{}.Registry()+".w1", tg.subject, []byte("{}"))
		}
	}
	w.Flush()
	for i, sub := range raw {
		n := 0
		for {
			m, err := sub.NextMsg(2 * time.Second)
			if err != nil {
				break
			}
			n++
			if !protocol.Forged(m, targets[i].request) && len(m.Data) > 0 && strings.Contains(string(m.Data), "r_of_w2") {
				t.Errorf("the worker's bytes on %s (reply %q) do not look forged", targets[i].subject, m.Reply)
			}
		}
		if n < 3 {
			t.Errorf("%s: %d of the forged deliveries arrived, want at least 3: the test shows nothing", targets[i].subject, n)
		}
	}
	select {
	case m := <-guarded:
		t.Errorf("worker w1 made a message reach a handler on another's subject: %s", m)
	default:
	}
}
