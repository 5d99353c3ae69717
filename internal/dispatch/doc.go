// Package dispatch hands runs to `skrip worker`s across a cluster (docs/cluster.md): on
// API nodes, a run is a message on the JetStream work-queue stream SKRIP_RUNS, its input
// files go to the work bucket, sealed (keys.go), and the node answers the workers' claims and records
// their results, once, in the database. Workers hold NATS credentials only.
//
// The stream, subjects and messages API nodes and workers share are in
// internal/dispatch/protocol; this package is the API node's side of them, and no
// worker imports it.
package dispatch
