// Package protocol is what API nodes and workers of a cluster say to each other
// (docs/cluster.md): the stream, consumer and registry they share, the subjects, and the
// JSON of every message on them. Both sides import it; it imports nothing of skrip's
// but leaves (runjob, runner, contract, blob, errs), so that a worker, which never holds
// the database URL, links no store and no SQL driver (TestWorkerLinksNoSQL,
// TestProtocolImportsOnlyLeaves). Changing a name or a tag here changes the wire: nodes
// of two versions must still understand each other during a rolling upgrade
// (TestWireUnchanged).
package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/runjob"
)

// The names of one installation's NATS assets are a Names (NewNames): every installation
// sharing a NATS account has a prefix of its own (SKRIP_NATS_PREFIX), and the zero Names,
// without one, are the names every installation had before the prefix existed. Every
// subject a worker may use is here, so that natsserver.Permissions and this table say
// the same.
const (
	Consumer = "workers" // the durable pull consumer every worker fetches from, on its installation's stream
	APIQueue = "api"     // the queue group API nodes answer workers' requests in

	stream   = "SKRIP_RUNS"    // the work queue: one message per run to execute
	registry = "skrip-workers" // the KV bucket of worker heartbeats, one key per worker
	keys     = "skrip-keys"    // the KV bucket of the API nodes' sealing secret; no worker may touch it

	// Requests from workers to any API node (queue group APIQueue), each followed by the
	// worker's id: a worker's NATS user may publish only under its own, so the API node
	// knows who asks from the subject, not from what the worker says.
	claimPrefix  = "skrip.api.claim."
	recordPrefix = "skrip.api.record."
	leasePrefix  = "skrip.api.lease."
	kick         = "skrip.api.kick" // API nodes tell the scheduler a run waits

	// outPrefix+<worker>.<run> carries a running run's output lines from its worker
	// (lossy); statusPrefix+<run> its status changes from the API node that made them
	// (lossy: the database is the truth).
	outPrefix    = "skrip.out."
	statusPrefix = "skrip.st."

	jobPrefix = "skrip.jobs." // jobPrefix+<run> is run's message on the stream

	// workerPrefix+<worker>+".cancel" asks a worker to stop a run it holds.
	workerPrefix = "skrip.w."
)

// MaxPrefix is the longest SKRIP_NATS_PREFIX: a stream or bucket name is short, and a
// worker's bucket adds the work bucket's name and the worker id to it.
const MaxPrefix = 32

// Names names one installation's NATS assets: its stream, buckets and subjects. An
// installation with prefix p has the stream p_SKRIP_RUNS, the buckets p-skrip-workers
// and p-skrip-keys, and every subject under the token p (p.skrip.jobs.<run>, …), so
// that two installations share one NATS account without meeting, and a worker's
// permissions (natsserver.Permissions), which name its subjects token by token, confine
// it to its own installation. The zero Names have no prefix: SKRIP_RUNS, skrip-workers,
// skrip.jobs.<run>, as before the prefix existed, so that an existing cluster keeps its
// assets.
type Names struct{ prefix string }

// NewNames returns the names of the installation with prefix ("" for none), or an error
// saying why prefix cannot name NATS assets (CheckPrefix).
func NewNames(prefix string) (Names, error) {
	if err := CheckPrefix(prefix); err != nil {
		return Names{}, err
	}
	return Names{prefix: prefix}, nil
}

// CheckPrefix refuses a prefix that cannot start a stream's, a bucket's and a subject's
// name: it must be at most MaxPrefix letters, digits and "_", beginning with a letter
// or digit ("$" and "_" begin NATS's own subjects, $JS and _INBOX). No "-": names are
// "<prefix>-skrip-…", so a prefix without one never makes a name that starts another
// installation's (the sweep of worker buckets deletes by their names' start). Empty is
// no prefix.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if len(prefix) > MaxPrefix {
		return fmt.Errorf("%q is %d characters long; a NATS prefix has at most %d", prefix, len(prefix), MaxPrefix)
	}
	for i, r := range prefix {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !letter && (i == 0 || r != '_') {
			return fmt.Errorf(`%q cannot start NATS names: a NATS prefix holds only letters, digits and "_", and begins with a letter or digit (it starts stream and bucket names, and is the first token of every subject; no "-", so that one installation's bucket names never start another's)`, prefix)
		}
	}
	return nil
}

// Prefix is the installation's prefix, "" for none.
func (n Names) Prefix() string { return n.prefix }

// Bucket is the name of the installation's bucket called name without a prefix:
// p-name, or name itself. The files and work buckets' defaults follow it
// (config: SKRIP_NATS_BUCKET, SKRIP_NATS_WORK_BUCKET).
func (n Names) Bucket(name string) string {
	if n.prefix == "" {
		return name
	}
	return n.prefix + "-" + name
}

// subject is the installation's subject s: s under the prefix's token.
func (n Names) subject(s string) string {
	if n.prefix == "" {
		return s
	}
	return n.prefix + "." + s
}

// Stream is the work queue: one message per run to execute.
func (n Names) Stream() string {
	if n.prefix == "" {
		return stream
	}
	return n.prefix + "_" + stream
}

// Registry is the KV bucket of worker heartbeats, one key per worker.
func (n Names) Registry() string { return n.Bucket(registry) }

// Keys is the KV bucket of the API nodes' sealing secret; no worker may touch it.
func (n Names) Keys() string { return n.Bucket(keys) }

// JobSubjects are the stream's subjects: JobSubject(<run>).
func (n Names) JobSubjects() string { return n.JobSubject("*") }

// JobSubject is the subject of run id's message.
func (n Names) JobSubject(id string) string { return n.subject(jobPrefix + id) }

// JobOf is the run whose message is on subject (JobSubject).
func (n Names) JobOf(subject string) string { return strings.TrimPrefix(subject, n.subject(jobPrefix)) }

// ClaimSubject, RecordSubject and LeaseSubject are the subjects worker asks API nodes
// on; with worker "*", those API nodes answer. APIs is them all, for every worker.
func (n Names) ClaimSubject(worker string) string  { return n.subject(claimPrefix + worker) }
func (n Names) RecordSubject(worker string) string { return n.subject(recordPrefix + worker) }
func (n Names) LeaseSubject(worker string) string  { return n.subject(leasePrefix + worker) }
func (n Names) APIs() string                       { return n.subject("skrip.api.>") }

// KickSubject is the subject API nodes tell the scheduler on that a run waits.
func (n Names) KickSubject() string { return n.subject(kick) }

// OutSubject is the subject of run id's output lines from worker; OutPrefix is what
// every such subject starts with.
func (n Names) OutSubject(worker, id string) string { return n.subject(outPrefix + worker + "." + id) }
func (n Names) OutPrefix() string                   { return n.subject(outPrefix) }

// StatusSubject is the subject of run id's status changes; StatusSubject("*") is them
// all, and StatusPrefix what each starts with.
func (n Names) StatusSubject(id string) string { return n.subject(statusPrefix + id) }
func (n Names) StatusPrefix() string           { return n.subject(statusPrefix) }

// WorkerSubjects are every subject worker answers requests on (its cancel, backlog and
// sandbox subjects).
func (n Names) WorkerSubjects(worker string) string { return n.subject(workerPrefix + worker + ".>") }

// CancelSubject is the subject worker id answers cancel requests on.
func (n Names) CancelSubject(worker string) string {
	return n.subject(workerPrefix + worker + ".cancel")
}

// BoxSubject is the subject worker id answers sandbox operation op on
// (skrip.w.<worker>.sb.<op>, boxes.go); BoxSubject(id, ">") is them all.
func (n Names) BoxSubject(worker, op string) string {
	return n.subject(workerPrefix + worker + ".sb." + op)
}

// BacklogSubject is the subject worker id answers backlog requests on (data: run id).
func (n Names) BacklogSubject(worker string) string {
	return n.subject(workerPrefix + worker + ".backlog")
}

// MaxDeliveries is the advisory JetStream sends when a run's message was delivered
// MaxDeliver times and its last holder went silent too.
func (n Names) MaxDeliveries() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + n.Stream() + "." + Consumer
}

// MaxDeliver is how many workers may try a run: one retry after a lost worker.
const MaxDeliver = 2

// XferKey is the key, in its worker's own bucket (WorkerBucket), of a sandbox file
// body on its way between an API node and a worker: the side that receives it deletes
// it.
func XferKey(id string) string { return "work/xfer/" + id }

// Input is one file of a run's /work/input, kept sealed in the work bucket (SealedKey).
type Input struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// Message is a run's message on the stream: everything a worker needs, with the files
// by checksum. It never holds the script's or the files' bytes, nor their keys.
type Message struct {
	Job    runjob.Job `json:"job"` // without Script: ScriptSHA256 names it
	Script Input      `json:"script"`
	Inputs []Input    `json:"inputs"`
	// Token proves a claim: only a worker the stream delivered the message to knows it,
	// and an API node compares it with the message on the stream. Its files are sealed
	// (SealedKey) when it is set; a message of an older API node has none, and its
	// files are in the bucket as they are (CASKey).
	Token string `json:"token,omitempty"`
}

// CASKey is the work bucket's key of the bytes with checksum sha (hex), as API nodes
// before sealing kept a run's files (a Message without Token).
func CASKey(sha string) string { return "work/cas/" + sha }

// WorkerBucket is the bucket of worker's own objects, beside the shared work bucket
// work: the artifacts and reports of the runs it holds, and the file bodies of its
// sandboxes. Only that worker and API nodes may read or write it
// (natsserver.Permissions); API nodes make it (a worker may not) before they give the
// worker a run or a file.
func WorkerBucket(work, worker string) string { return work + "-w-" + worker }

// WorkerBucketTTL is how long a worker's bucket keeps an object: everything in it is
// taken by an API node within minutes (a report, artifacts, a sandbox file's body), and
// what a lost worker or node left there goes with it.
const WorkerBucketTTL = 6 * time.Hour

// AttemptPrefix is where attempt number attempt of run id keeps its artifacts and
// report, in its worker's bucket (WorkerBucket).
func AttemptPrefix(id string, attempt int64) string {
	return "work/runs/" + id + "/a" + strconv.FormatInt(attempt, 10) + "/"
}

// Claim asks to run a run as an attempt; the reply is a ClaimReply.
type Claim struct {
	Run     string `json:"run"`
	Attempt int64  `json:"attempt"`
	Worker  string `json:"worker"`
	Token   string `json:"token,omitempty"` // the delivered Message's, which proves the claim
}

// What an API node answers a claim or a record with.
const (
	Go       = "go"       // claim: the run is yours as this attempt
	Recorded = "recorded" // record: your result is the run's; acknowledge the message
	Final    = "final"    // the run is over already: acknowledge the message, drop your work
	Stale    = "stale"    // a later attempt holds the run: drop your work, never acknowledge
	// Held answers the claim of a redelivered run whose earlier attempt still runs on a
	// live worker (its progress signals were lost while NATS elected a leader): keep the
	// message, unacknowledged and alive, and ask again; the attempt may not start.
	Held = "held"
)

// Reply answers a claim or a record: one of Go, Recorded, Final or Stale, or Error when
// the node could not decide (the worker asks again).
type Reply struct {
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
	// Keys open the run's sealed files: a Go to a claim of a Message with a Token has
	// one for the script and one for each input file.
	Keys []InputKey `json:"keys,omitempty"`
}

// Record reports how an attempt ended: the report is in the worker's own bucket at
// ReportKey.
type Record struct {
	Run       string `json:"run"`
	Attempt   int64  `json:"attempt"`
	Worker    string `json:"worker"`
	ReportKey string `json:"report_key"`
}

// Lease tells the API nodes which runs a worker holds; the reply says which of them it
// is to stop: taken over by another attempt, or over (LeaseReply).
type Lease struct {
	Worker string  `json:"worker"`
	Runs   []Claim `json:"runs"`
}

// LeaseReply lists the runs a worker is to stop: Stale ones are another attempt's now
// (stop, never acknowledge), Cancel ones a user cancelled (stop, record them).
type LeaseReply struct {
	Stale  []string `json:"stale,omitempty"`
	Cancel []string `json:"cancel,omitempty"`
}

// Line is one output line of a running run, as its worker publishes it; Seq counts
// the attempt's lines from 1, so that a node joining late can tell the backlog's lines
// from live ones.
type Line struct {
	Attempt int64  `json:"attempt"` // the attempt that printed it; its Seq counts from 1 again
	Seq     int64  `json:"seq"`
	Type    string `json:"type"` // "stdout", "stderr" or "notice"
	Data    string `json:"data"`
}

// Backlog is a running run's first lines as its worker kept them (up to a cap), for a
// node whose first subscriber came after the run started.
type Backlog struct {
	Lines []Line `json:"lines"`
	Full  bool   `json:"full,omitempty"` // lines came after the cap
	// Attempt is the attempt of the run the worker holds and runs; 0 when it holds none.
	Attempt int64 `json:"attempt,omitempty"`
}

// Status is a run's status change, as the API node that made it publishes it.
type Status struct {
	Node   string `json:"node"`
	Status string `json:"status"`
}

// RequestTimeout bounds an API node's answer to a worker's claim or record; a worker
// waits longer than that before it asks again.
const RequestTimeout = 90 * time.Second

// HeartbeatEvery is how often a worker puts its heartbeat, for an ack wait.
func HeartbeatEvery(ackWait time.Duration) time.Duration {
	return max(ackWait/6, 500*time.Millisecond)
}

// RegistryTTL is how long a worker's heartbeat stays in the registry, for an ack wait:
// a worker whose heartbeat is older is gone.
func RegistryTTL(ackWait time.Duration) time.Duration { return 3 * HeartbeatEvery(ackWait) }

// Heartbeat is what a worker puts in the registry, every few seconds.
type Heartbeat struct {
	Worker      string    `json:"worker"`
	Host        string    `json:"host"`
	Runner      string    `json:"runner"`
	Concurrency int       `json:"concurrency"`
	Busy        int       `json:"busy"`
	Runs        []string  `json:"runs"`
	Sandboxes   []string  `json:"sandboxes"`      // the boxes it holds
	BoxBudget   int64     `json:"sandbox_budget"` // the memory its boxes' workspaces may take; 0 keeps none
	Version     string    `json:"version"`
	Started     time.Time `json:"started"`
	At          time.Time `json:"at"`
}

// Seen says how long ago a heartbeat was put, in whole seconds.
func (hb Heartbeat) Seen(now time.Time) string {
	return fmt.Sprintf("%ds ago", int(now.Sub(hb.At).Round(time.Second)/time.Second))
}
