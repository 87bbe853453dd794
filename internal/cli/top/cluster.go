package top

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// noAnswer marks a node whose agent could not be read, in the NODES and
// NODE columns.
const noAnswer = " (no answer)"

// jobRow is one line of the cluster view: a job's devices added up, or
// with --job one port of that job.
type jobRow struct {
	job, node, dev, port, rail, pods string
	devices                          int
	sum                              rdmacounter.Summary
}

// jobOf is the group a held port belongs to: namespace/job, or
// namespace/pod:NAME for a pod that names no job.
func jobOf(h holder) string {
	return h.namespace + "/" + cmp.Or(h.job, "pod:"+h.pod)
}

// jobFilter is which held ports --job names: with a namespace
// (NAMESPACE/NAME, or NAMESPACE/pod:NAME as the view prints a pod of no
// job), that job; a bare NAME, the job of that name in the one namespace
// that has one. It returns the job's full name for the header, and a note
// when a bare name is in several namespaces (then nothing matches: two
// jobs are never added up as one).
func jobFilter(job string, snaps ...snapshot) (match func(holder) bool, name, note string) {
	if job == "" {
		return func(holder) bool { return true }, "", ""
	}
	if strings.Contains(job, "/") {
		return func(h holder) bool { return jobOf(h) == job }, job, ""
	}
	namespaces := map[string]bool{}
	for _, s := range snaps {
		for _, c := range s.ports {
			if c.pod != "" && c.job == job {
				namespaces[c.namespace] = true
			}
		}
	}
	if len(namespaces) > 1 {
		ns := slices.Sorted(maps.Keys(namespaces))
		return func(holder) bool { return false }, job,
			fmt.Sprintf("job %s is in namespaces %s: give --job NAMESPACE/%s", job, strings.Join(ns, ", "), job)
	}
	for ns := range namespaces {
		full := ns + "/" + job
		return func(h holder) bool { return jobOf(h) == full }, full, ""
	}
	return func(holder) bool { return false }, job, ""
}

// jobAcc is a row being added up, with the nodes, rails and pods its
// ports were on.
type jobAcc struct {
	row                jobRow
	nodes, rails, pods map[string]bool
}

// clusterFrame computes the rates between two snapshots of held devices:
// a row per job (its ports on every node added up), or, when o.job is
// set, a row per port of that job. Each port's rates are over its own
// agent's two answers. A counter that went down (an agent restarted: the
// exported totals start again) marks its row reset and has no rate. A
// port whose node's agent did not answer this time (or the last) is
// still listed, its rates unknown and its node marked. notes say what
// the frame could not show.
func clusterFrame(prev, cur snapshot, o options) (rows []jobRow, jobName string, notes []string) {
	match, jobName, note := jobFilter(o.job, prev, cur)
	if note != "" {
		notes = append(notes, note)
	}
	accs := map[string]*jobAcc{}
	add := func(id portID, c *portCounters, sum rdmacounter.Summary, missing bool) {
		job, rail := jobOf(c.holder), cmp.Or(c.rail, "-")
		node := id.node
		if missing {
			node += noAnswer
		}
		key := job
		if o.job != "" {
			key = strings.Join([]string{id.node, id.nic, id.port, id.pci}, "|")
		}
		acc, ok := accs[key]
		if !ok {
			acc = &jobAcc{row: jobRow{job: job, node: node, dev: id.nic, port: id.port, rail: rail, pods: c.namespace + "/" + c.pod},
				nodes: map[string]bool{}, rails: map[string]bool{}, pods: map[string]bool{}}
			accs[key] = acc
		}
		acc.row.devices++
		acc.row.sum = acc.row.sum.Add(sum)
		acc.nodes[node], acc.rails[rail], acc.pods[c.pod] = true, true, true
	}
	for id, c := range cur.ports {
		if c.pod == "" || !match(c.holder) {
			continue
		}
		p, ok := prev.ports[id]
		switch {
		case ok:
			add(id, c, rates(p, c), false)
		case prev.missing[id.node] != "":
			add(id, c, rdmacounter.Summary{}, true) // no earlier answer to take rates from
		}
	}
	for id, p := range prev.ports {
		if _, ok := cur.ports[id]; !ok && cur.missing[id.node] != "" && p.pod != "" && match(p.holder) {
			add(id, p, rdmacounter.Summary{}, true)
		}
	}
	rows = make([]jobRow, 0, len(accs))
	for _, acc := range accs {
		r := acc.row
		if o.job == "" {
			r.node = strings.Join(slices.Sorted(maps.Keys(acc.nodes)), ",")
			r.rail = strings.Join(slices.Sorted(maps.Keys(acc.rails)), ",")
			r.pods = fmt.Sprint(len(acc.pods))
		}
		rows = append(rows, r)
	}
	less := sorters[o.sortBy]
	slices.SortStableFunc(rows, func(a, b jobRow) int {
		return cmp.Or(less(row{sum: a.sum}, row{sum: b.sum}), strings.Compare(a.job, b.job), strings.Compare(a.node, b.node),
			strings.Compare(a.dev, b.dev), strings.Compare(a.port, b.port))
	})
	return rows, jobName, notes
}

// rates are one port's rates between two answers of its agent, each at
// its own time; a counter missing from either has none. A counter that
// went down means the agent restarted and exports new totals: none of
// the port's counters has a rate then, and the port is marked reset.
func rates(p, c *portCounters) rdmacounter.Summary {
	dt := c.at.Sub(p.at).Seconds()
	if dt <= 0 {
		return rdmacounter.Summary{}
	}
	var rs []rdmacounter.Rate
	for i, v := range c.values {
		before, ok := p.values[i]
		switch {
		case !ok:
		case v < before:
			return rdmacounter.Summary{Reset: true}
		default:
			rs = append(rs, rdmacounter.Rate{Index: i, PerSecond: (v - before) / dt})
		}
	}
	slices.SortFunc(rs, func(a, b rdmacounter.Rate) int { return cmp.Compare(a.Index, b.Index) })
	return rdmacounter.Summarize(rs)
}

// renderCluster writes one frame of the cluster view. Every name in it
// comes from the agents' labels and is escaped.
func renderCluster(w io.Writer, rows []jobRow, jobName string, notes []string, o options) error {
	what := "job"
	if o.job != "" {
		what = "port"
	}
	if len(rows) != 1 {
		what += "s"
	}
	if o.job != "" {
		what += " of job " + termsafe.Escape(jobName)
	}
	head := fmt.Sprintf("railyard top --cluster: %d %s, every %s, sorted by %s", len(rows), what, o.interval, o.sortBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if o.job == "" {
		fmt.Fprintln(tw, "PODS\tDEVICES\tTX/s\tRX/s\tERR/s\tCONG/s\t  JOB\t  NODES\t  RAILS")
	} else {
		fmt.Fprintln(tw, "PORT\tRAIL\tTX/s\tRX/s\tERR/s\tCONG/s\t  NODE\t  DEVICE\t  POD")
	}
	e := termsafe.Escape
	for _, r := range rows {
		c := cells(r.sum)
		if o.job == "" {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t  %s\t  %s\t  %s\n", r.pods, r.devices, c.tx, c.rx, c.errs, c.cong, e(r.job), e(r.node), e(r.rail))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t  %s\t  %s\t  %s\n", e(r.port), e(r.rail), c.tx, c.rx, c.errs, c.cong, e(r.node), e(r.dev), e(r.pods))
		}
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "  "+e(n)); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// frameNotes are what a frame says under its header, once each: the
// nodes whose agent could not be read (not counted), then what the
// agents' answers did not count.
func frameNotes(prev, cur snapshot, frame []string) []string {
	var out []string
	for _, node := range slices.Sorted(maps.Keys(cur.missing)) {
		out = append(out, fmt.Sprintf("not counted: %s: %s", cmp.Or(node, "(no node)"), cur.missing[node]))
	}
	seen := map[string]bool{}
	for _, n := range slices.Concat(frame, prev.notes, cur.notes) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// runCluster is `top --cluster`: every agent's counters through the API
// server, two scrapes --interval apart per frame; scrape is the agents'
// reader (nil: the API server's pod proxy, each agent bounded by
// --interval).
func runCluster(ctx context.Context, s iostreams.Streams, o options, scrape scrapeFunc) error {
	if scrape == nil {
		client, err := kubeclient.New(o.kubeconfig, 30*time.Second)
		if err != nil {
			return err
		}
		scrape = scraper{client: client, o: o, timeout: o.interval, now: time.Now}.scrape
	}
	prev, err := take(ctx, scrape)
	if err != nil {
		return err
	}
	clear := iostreams.IsTerminal(s.Out)
	for i := 0; o.iterations == 0 || i < o.iterations; i++ {
		t := time.NewTimer(o.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		cur, err := take(ctx, scrape)
		if err != nil {
			return err
		}
		if clear {
			fmt.Fprint(s.Out, "\x1b[H\x1b[2J")
		}
		rows, jobName, notes := clusterFrame(prev, cur, o)
		if err := renderCluster(s.Out, rows, jobName, frameNotes(prev, cur, notes), o); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}
