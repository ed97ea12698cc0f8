package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"

	"github.com/weirstream/weir/ledger"
)

// ledgerSource is the late-data ledger a backfill reads: the job's late
// sink read back through its kind (connector.SinkKind.OpenLedger: a
// ledger directory, a Postgres late table, a Kafka late topic), and with
// a late_partial sink of its own, that one too, one after the other.
type ledgerSource []kindLedger

// kindLedger is one sink's ledger: name is the sink's (late,
// late_partial), under which checkpoints keep its state.
type kindLedger struct {
	name string
	r    connector.LedgerReader
}

// ledgerCut is how much of the ledger a checkpoint of the live job
// covers: the sinks' states in it, by sink name (none when it had none:
// nothing committed), and its run (the states' epochs are that run's).
type ledgerCut struct {
	states map[string][]byte
	run    int64
	// entries are how many records the run wrote to each late sink up to
	// the checkpoint (job.Committed.Entries): the least a scan up to the
	// cut finds of the run's entries.
	entries map[string]int64
	// all: the whole ledger is read (the run finished), still checked
	// against entries.
	all bool
}

// of is the cut of sink name's ledger (nil: all of it).
func (c *ledgerCut) of(name string) *connector.LedgerCut {
	if c == nil || c.all {
		return nil
	}
	return &connector.LedgerCut{State: c.states[name], Run: c.run}
}

// openLedgerSource opens the job's ledger and takes the single-writer
// lock of backfills over it (a dry run's too: beside a backfill half
// applied, its comparison would show differences that are not there). To
// inspect it (inspect: no lock), a late_partial sink of a kind that
// cannot be read back is left out: the ledger is what is read.
func openLedgerSource(p *spec.Plan, o BackfillOptions, inspect bool) (ledgerSource, error) {
	var srcs ledgerSource
	reg := p.Kinds()
	for _, k := range []struct {
		name, reason string
		sink         *spec.Sink
	}{{"late", "window_expired", p.Sinks.Late}, {"late_partial", "window_expired_partial", p.Sinks.LatePartial}} {
		if k.sink == nil {
			continue
		}
		kind, ok := reg.Lookup(k.sink.Type)
		if (!ok || kind.Sink == nil || kind.Sink.OpenLedger == nil) && inspect && k.name == "late_partial" {
			continue
		}
		if !ok || kind.Sink == nil || kind.Sink.OpenLedger == nil {
			srcs.close()
			kinds := strings.Join(connector.LedgerKinds(reg), ", ")
			if k.name == "late" {
				return nil, refused("backfill reads the late-data ledger: set sinks.late: {type: ledger, dir: ledger} (or another kind it can read back: %s); it is %s", kinds, k.sink.Type)
			}
			return nil, refused("sinks.late_partial is %s, which backfill cannot read: its records missed some of their sliding windows, and the results would stay short of them; leave it out (the ledger then holds them) or make it a kind backfill reads back (%s)", k.sink.Type, kinds)
		}
		var results connector.Settings
		if r := p.Sinks.Results.First(k.sink.Type); r != nil {
			results = spec.SinkSettings(r)
		}
		r, err := kind.Sink.OpenLedger(context.Background(), connector.LedgerOpen{Settings: spec.SinkSettings(k.sink), Output: "sinks." + k.name,
			Name: k.name, Reason: k.reason, Job: p.Name, Path: job.RunOptions{Dir: o.Dir}.Path, Lock: !inspect, Results: results})
		if err != nil {
			srcs.close()
			return nil, err
		}
		srcs = append(srcs, kindLedger{k.name, r})
	}
	if len(srcs) == 0 {
		return nil, refused("backfill reads the late-data ledger: set sinks.late: {type: ledger, dir: ledger} (or a postgres table, or a kafka topic)")
	}
	return srcs, nil
}

// scan calls fn for the entries up to the cut (nil: all) and returns
// the corrupt entries it skipped, each said where it is and why. It fails
// when a sink's ledger holds fewer of the cut's run's entries than the
// checkpoint says the run wrote to it: entries were lost (a broker that
// keeps nothing across a restart, retention, rows deleted), and a
// backfill without them would leave the results short without a word.
func (m ledgerSource) scan(cut *ledgerCut, fn func(ledger.Entry) error) ([]string, error) {
	var bad []string
	for _, s := range m {
		var found int64
		b, err := s.r.Scan(context.Background(), cut.of(s.name), func(line []byte) error {
			var e ledger.Entry
			if err := json.Unmarshal(line, &e); err != nil {
				return fmt.Errorf("%s: an entry its kind read back is no ledger entry: %w", s.r.Where(), err)
			}
			if cut != nil && (e.Run == cut.run || e.Run == 0) {
				found++
			}
			return fn(e)
		})
		if bad = append(bad, b...); err != nil {
			return bad, err
		}
		// Corrupt entries are reported as such, not as lost.
		if cut != nil && found+int64(len(b)) < cut.entries[s.name] {
			return bad, fmt.Errorf("%s holds %d entries of the job's run %d, but its checkpoint says the run wrote %d there: %d were lost (a broker that kept nothing across a restart, retention, rows or files deleted); the results cannot be completed from this ledger",
				s.r.Where(), found, cut.run, cut.entries[s.name], cut.entries[s.name]-found-int64(len(b)))
		}
	}
	return bad, nil
}

// describe names what scan reads up to the cut, for the report.
func (m ledgerSource) describe(cut *ledgerCut) string {
	var d []string
	for _, s := range m {
		if x := s.r.Describe(cut.of(s.name)); x != "" {
			d = append(d, x)
		}
	}
	return strings.Join(d, " and ")
}

func (m ledgerSource) close() error {
	var errs []error
	for _, s := range m {
		errs = append(errs, s.r.Close())
	}
	return errors.Join(errs...)
}

// ScanLedger calls fn for every entry of the job's late-data ledger (a
// ledger directory, a Postgres table or Kafka topics; and late_partial's,
// if it has its own and is a kind read back) and returns the entries it could not read, each said
// where it is and why, and where it read (ledger directories by their
// path from dir, the spec's directory).
func ScanLedger(p *spec.Plan, dir string, fn func(ledger.Entry) error) (bad, where []string, err error) {
	src, err := openLedgerSource(p, BackfillOptions{Dir: dir, DryRun: true}, true)
	if err != nil {
		return nil, nil, err
	}
	defer src.close()
	for _, s := range src {
		w := s.r.Where()
		if rel, err := filepath.Rel(dir, w); err == nil && !strings.HasPrefix(rel, "..") {
			w = rel // a directory, from the spec's (a sentence stays)
		}
		where = append(where, w)
	}
	bad, err = src.scan(nil, fn)
	return bad, where, err
}
