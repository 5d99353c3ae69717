package main

import (
	"fmt"
	"math"
	"runtime"
)

// capacity is one resource's limit on a cluster's runs/s.
type capacity struct {
	name   string
	rate   string // what it does alone
	uses   string // what one run uses of it
	runs   float64
	shared bool // one for the whole cluster (not more of it with more nodes)
	later  bool // as it will be after many runs, not as a new cluster has it
}

func report(results []result, res resources, load1, load2 string, idle float64) {
	cores := runtime.NumCPU()
	fmt.Printf("A no-op tool, %d sequential runs for latency, then %d clients for %s; bwrap runner, root %s. Every process on this machine (%d cores), the benchmark's clients too. Load average before: %s; after: %s; the CPUs were %.0f%% busy over 3 s before the benchmark started anything.\n\n",
		*n, *clients, *duration, *rootfs, cores, load1, load2, 100*idle)
	fmt.Println("| setup | p50 | p95 | runs/s | under load: p50 / p95 / max | failed | retried | machine CPU busy | work bucket keys |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		keys := "–"
		if r.workers > 0 {
			keys = fmt.Sprint(r.workKeys)
		}
		fmt.Printf("| %s | %s | %s | %.1f | %s / %s / %s | %d | %d | %.0f%% | %s |\n", r.name, ms(r.p50), ms(r.p95), r.rate, ms(r.loadP50), ms(r.loadP95),
			ms(r.loadMax), r.failed, r.retried, 100*r.busy, keys)
	}
	fmt.Println()
	fmt.Println("CPU per run in the throughput phase, in ms (from /proc/<pid>/stat; sandboxes are the runs' bwrap processes, counted as children of the process that ran them; PostgreSQL is the backends of the API node's connections):")
	fmt.Println()
	fmt.Println("| setup | API node | workers | sandboxes | nats-server | PostgreSQL | total | DB table scans per run | rows written per run | NATS messages in per run | JetStream API requests per run |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		c := r.cpu
		scans, writes, msgs, api := "–", "–", "–", "–"
		if r.hasDBStat {
			scans, writes = fmt.Sprintf("%.1f", r.dbScans), fmt.Sprintf("%.1f", r.dbWrites)
		}
		if r.workers > 0 {
			msgs, api = fmt.Sprintf("%.1f", r.natsMsgs), fmt.Sprintf("%.1f", r.natsAPI)
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, cpuMS(c.api), cpuMS(c.workers), cpuMS(c.sandboxes), cpuMS(c.nats),
			cpuMS(c.pg), cpuMS(c.api+c.workers+c.sandboxes+c.nats+c.pg), scans, writes, msgs, api)
	}
	fmt.Println()

	var one, two result
	for _, r := range results {
		switch {
		case r.workers == 1 && one.name == "":
			one = r
		case r.workers == 2 && two.name == "":
			two = r
		}
	}
	fmt.Printf("Each resource alone, %d callers at once for %s:\n\n", *clients, *opsFor)
	fmt.Println("| resource | operation | per second |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| run queue (stream SKRIP_RUNS, R1) | publish with message id + fetch + double ack, %d-byte message | %.0f |\n", res.msgBytes, res.queue)
	for _, op := range objectOps {
		what := op + " (400-byte report)"
		if op == "List" {
			what = "List (1 key in the bucket)"
		}
		fmt.Printf("| work bucket (Object Store, R1) | %s | %.0f |\n", what, res.objects[op])
	}
	fmt.Printf("| work bucket (Object Store, R1) | List (%d keys in the bucket) | %.0f |\n", res.bigKeys, res.objects["List, big"])
	fmt.Printf("| PostgreSQL | CreateRun + ClaimRun + RecordRun | %.0f |\n", res.dbWrites)
	fmt.Printf("| PostgreSQL | the same + 4 GetRun | %.0f |\n", res.dbAll)
	fmt.Println()
	fmt.Printf("One List, alone: %s with 1 key in the bucket, %s with %d (mostly delete markers). The cluster's work bucket held %d keys (live or delete markers) after its %d runs above.\n\n",
		ms(res.listSmall), ms(res.listBig), res.bigKeys, res.workMeta, one.runs+two.runs)

	// Seconds of each resource one run takes.
	var objSec float64
	for _, op := range objectOps {
		objSec += 1 / res.objects[op]
	}
	bigSec := objSec - 1/res.objects["List"] + 1/res.objects["List, big"]
	caps := []capacity{
		{name: "run queue", rate: fmt.Sprintf("%.0f cycles/s", res.queue), uses: "1 publish + 1 fetch + 1 ack", runs: res.queue, shared: true},
		{name: "work bucket (1 key)", rate: "see above", uses: "1 Stat, 1 Put, 1 Get, 1 List, 1 Delete", runs: 1 / objSec, shared: true},
		{name: fmt.Sprintf("work bucket (%d keys: %d runs later)", res.bigKeys, res.bigKeys), rate: "see above", uses: "the same", runs: 1 / bigSec, shared: true, later: true},
		{name: "PostgreSQL", rate: fmt.Sprintf("%.0f sets/s", res.dbAll), uses: "3 write transactions + 4 GetRun", runs: res.dbAll, shared: true},
	}
	// CPU per run as the cluster with one worker measured it: its work bucket was the
	// emptiest of the cluster's phases (see the List above).
	if one.cpu.api > 0 {
		caps = append(caps, capacity{name: fmt.Sprintf("API node CPU (one node, %d cores)", cores), rate: fmt.Sprintf("%d CPU s/s", cores),
			uses: cpuMS(one.cpu.api) + " ms CPU", runs: float64(cores) / one.cpu.api.Seconds()})
	}
	if one.cpu.nats > 0 {
		caps = append(caps, capacity{name: fmt.Sprintf("nats-server CPU (%d cores)", cores), rate: fmt.Sprintf("%d CPU s/s", cores),
			uses: cpuMS(one.cpu.nats) + " ms CPU", runs: float64(cores) / one.cpu.nats.Seconds(), shared: true})
	}
	if one.cpu.pg > 0 {
		caps = append(caps, capacity{name: fmt.Sprintf("PostgreSQL CPU (%d cores)", cores), rate: fmt.Sprintf("%d CPU s/s", cores),
			uses: cpuMS(one.cpu.pg) + " ms CPU", runs: float64(cores) / one.cpu.pg.Seconds(), shared: true})
	}
	perWorker := one.rate
	fmt.Printf("Per worker as measured: %.1f runs/s with 1 worker, %.1f each with 2 (all on the same %d cores). Its processes were charged %s ms of CPU per run (the worker %s, the sandbox %s); the kernel's work of making and removing a sandbox's namespaces and cgroups is charged to none of them, so that is no bound on a worker's rate.\n\n",
		one.rate, two.rate/2, cores, cpuMS(one.cpu.workers+one.cpu.sandboxes), cpuMS(one.cpu.workers), cpuMS(one.cpu.sandboxes))

	fmt.Printf("Capacity = what a resource does per second ÷ what one run uses of it; the load is W workers × %.1f runs/s (the measured rate of one worker) ÷ capacity:\n\n", perWorker)
	fmt.Println("| resource | rate alone | one run uses | capacity, runs/s | load at 10 workers | load at 100 workers |")
	fmt.Println("|---|---|---|---|---|---|")
	first := -1
	for i, c := range caps {
		fmt.Printf("| %s | %s | %s | %.0f | %.0f%% | %.0f%% |\n", c.name, c.rate, c.uses, c.runs, 100*10*perWorker/c.runs, 100*100*perWorker/c.runs)
		if c.shared && !c.later && (first < 0 || c.runs < caps[first].runs) {
			first = i
		}
	}
	fmt.Println()
	if first >= 0 {
		c := caps[first]
		fmt.Printf("Saturates first (of what the whole cluster shares): **%s**, at about %.0f runs/s, i.e. %.1f workers at %.1f runs/s each.",
			c.name, c.runs, c.runs/perWorker, perWorker)
		if one.cpu.api > 0 {
			node := float64(cores) / one.cpu.api.Seconds()
			fmt.Printf(" API nodes add up: one of %d cores carries about %.0f runs/s, so %d workers need %d of them and 100 need %d.",
				cores, node, 10, int(math.Ceil(10*perWorker/node)), int(math.Ceil(100*perWorker/node)))
		}
		fmt.Println()
	}
	for _, c := range caps {
		if c.later {
			fmt.Printf("\nA work bucket that kept every deleted key's marker, and a record that Listed it (the cluster before the fix of 2026-11-26: it now keeps no markers and deletes by key): %s, it would carry only %.0f runs/s (%.1f workers).\n",
				c.name, c.runs, c.runs/perWorker)
		}
	}
	fmt.Printf("\nPostgreSQL backends used %s ms of CPU per CreateRun + ClaimRun + RecordRun set.\n", cpuMS(res.dbCPU))

}
