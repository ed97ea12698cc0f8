package backfill

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"

	"github.com/weirstream/weir/ledger"
)

// ledgerSource is the late-data ledger a backfill reads: the ledger
// directory, a Postgres late table or Kafka late topics; with a
// late_partial sink of its own, that one too.
type ledgerSource interface {
	// scan calls fn for the entries up to the cut (nil: all) and returns
	// the corrupt entries it skipped, each said where it is and why.
	scan(cut *ledgerCut, fn func(ledger.Entry) error) ([]string, error)
	// describe names what scan reads up to the cut, for the report (""
	// for a ledger directory, which the checkpoint's cut describes).
	describe(cut *ledgerCut) string
	close() error
}

// ledgerCut is how much of the ledger a checkpoint of the live job
// covers: the positions of ledger directories and the epochs of Postgres
// ledger tables' rows, by sink name (the zero Pos or epoch 0 when it had
// none: job.Committed). Kafka ledgers are read read_committed, which is
// their cut.
type ledgerCut struct {
	pos    map[string]ledger.Pos
	epochs map[string]int64
	run    int64 // the run of the checkpoint (its epochs are that run's)
}

// openLedgerSource opens the job's ledger and, unless dry, takes the
// single-writer lock of backfills over it.
func openLedgerSource(p *spec.Plan, o BackfillOptions) (ledgerSource, error) {
	late, partial := p.Sinks.Late, p.Sinks.LatePartial
	if late != nil && late.Type == "kafka" {
		// A Kafka ledger goes with Kafka results, whose backfill holds
		// the archive, which one process at a time may open: that is the
		// single-writer lock.
		src := &kafkaLedger{sink: late, topics: map[string]string{late.Topic: "window_expired"}}
		if partial != nil && partial.Type == "kafka" {
			src.topics[partial.Topic] = "window_expired_partial"
		}
		return src, nil
	}
	var srcs multiLedger
	for _, k := range []struct {
		name string
		sink *spec.Sink
	}{{"late", late}, {"late_partial", partial}} {
		var src ledgerSource
		switch {
		case k.sink == nil:
			continue
		case k.sink.Type == "ledger":
			f := &fileLedger{name: k.name, dir: job.LedgerDir(p, o.Dir, k.sink)}
			if !o.DryRun {
				unlock, err := ledger.Lock(f.dir)
				if err != nil {
					srcs.close()
					return nil, err
				}
				f.unlock = unlock
			}
			src = f
		case k.sink.Type == "postgres":
			l, err := openPGLedger(k.name, k.sink.URL, k.sink.Table, p.Name, !o.DryRun)
			if err != nil {
				srcs.close()
				return nil, err
			}
			src = l
		case k.name == "late":
			return nil, refused("backfill reads the late-data ledger: set sinks.late: {type: ledger, dir: ledger} (or a postgres table, or a kafka topic); it is %s", k.sink.Type)
		default:
			srcs.close()
			return nil, refused("sinks.late_partial is %s, which backfill cannot read: its records missed some of their sliding windows, and the results would stay short of them; leave it out (the ledger then holds them) or make it a ledger or a postgres table", k.sink.Type)
		}
		srcs = append(srcs, src)
	}
	if len(srcs) == 0 {
		return nil, refused("backfill reads the late-data ledger: set sinks.late: {type: ledger, dir: ledger} (or a postgres table, or a kafka topic)")
	}
	return srcs, nil
}

// multiLedger reads the late and late_partial ledgers one after the other.
type multiLedger []ledgerSource

func (m multiLedger) scan(cut *ledgerCut, fn func(ledger.Entry) error) ([]string, error) {
	var bad []string
	for _, s := range m {
		b, err := s.scan(cut, fn)
		if bad = append(bad, b...); err != nil {
			return bad, err
		}
	}
	return bad, nil
}

func (m multiLedger) describe(cut *ledgerCut) string {
	var d []string
	for _, s := range m {
		if x := s.describe(cut); x != "" {
			d = append(d, x)
		}
	}
	return strings.Join(d, " and ")
}

func (m multiLedger) close() error {
	var errs []error
	for _, s := range m {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// fileLedger is a ledger directory; name is its sink's, under which
// checkpoints keep its position.
type fileLedger struct {
	name, dir string
	unlock    func() error
}

func (f *fileLedger) scan(cut *ledgerCut, fn func(ledger.Entry) error) ([]string, error) {
	var pos *ledger.Pos
	if cut != nil {
		p := cut.pos[f.name] // the zero Pos (nothing) when the checkpoint has none
		pos = &p
	}
	corrupt, err := ledger.ScanTo(f.dir, pos, fn)
	bad := make([]string, len(corrupt))
	for i, c := range corrupt {
		bad[i] = fmt.Sprintf("%s line %d: %s", filepath.Join(f.dir, c.Segment), c.Line, c.Reason)
	}
	return bad, err
}

func (f *fileLedger) describe(*ledgerCut) string { return "" }

func (f *fileLedger) close() error {
	if f.unlock != nil {
		return f.unlock()
	}
	return nil
}

// kafkaLedger is the late topic (and late_partial's, if it is Kafka too)
// of a job with Kafka results: each record an entry's line, keyed by its
// id, committed in the job's checkpoint transactions. A backfill reads
// what read_committed readers see when it starts.
type kafkaLedger struct {
	sink   *spec.Sink
	topics map[string]string // topic: the reason of its entries
}

func (k *kafkaLedger) describe(*ledgerCut) string {
	return "the committed records of topic " + strings.Join(slices.Sorted(maps.Keys(k.topics)), " and ")
}

func (k *kafkaLedger) scan(_ *ledgerCut, fn func(ledger.Entry) error) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var bad []string
	var ferr error
	err := kafkaio.ReadCommitted(ctx, k.sink.Brokers, slices.Sorted(maps.Keys(k.topics)), time.Second, func(r *kgo.Record) {
		var e ledger.Entry
		if ferr != nil {
			return
		}
		if json.Unmarshal(r.Value, &e) != nil || e.ID == "" || len(e.Windows) == 0 {
			bad = append(bad, fmt.Sprintf("topic %s partition %d offset %d: not a ledger entry", r.Topic, r.Partition, r.Offset))
			return
		}
		e.Kind, e.Reason, e.ArrivedAt = "late", k.topics[r.Topic], r.Timestamp.UnixMilli()
		ferr = fn(e)
	}, kafkaio.AuthFrom(spec.SinkSettings(k.sink), "")...)
	return bad, errors.Join(err, ferr)
}

func (k *kafkaLedger) close() error { return nil }

// pgLedger is a Postgres late table (pgio.RecordSink: id, reason, record,
// meta, arrived_at, epoch). Its rows are committed with the live job's
// checkpoints, each checkpoint's as its epoch; a backfill reads those of
// the cut's epochs and before (and rows of no epoch, from older weir) in
// one snapshot taken at its start: a restore of the live job deletes the
// rows of later epochs.
// The single-writer lock is a session advisory lock on the table's name,
// released when the connection ends (so a killed backfill never leaves
// it held).
type pgLedger struct {
	name  string // the sink's: late or late_partial
	db    *sql.DB
	conn  *sql.Conn // holds the advisory lock
	table string
	job   string // the job whose rows are read (with those of no job)
}

func openPGLedger(name, url, table, job string, lock bool) (*pgLedger, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	l := &pgLedger{name: name, db: db, table: table, job: job}
	if lock {
		ctx := context.Background()
		if l.conn, err = db.Conn(ctx); err != nil {
			db.Close()
			return nil, err
		}
		var ok bool
		if err := l.conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, "weir backfill "+table).Scan(&ok); err != nil {
			l.close()
			return nil, err
		}
		if !ok {
			l.close()
			return nil, fmt.Errorf("another backfill of the ledger table %s is running (it holds the advisory lock on its name); wait for it to end", table)
		}
	}
	return l, nil
}

func (l *pgLedger) describe(cut *ledgerCut) string {
	if cut == nil {
		return "job " + l.job + "'s rows of table " + l.table + " committed at the start"
	}
	return fmt.Sprintf("job %s's rows of table %s up to checkpoint epoch %d", l.job, l.table, cut.epochs[l.name])
}

func (l *pgLedger) scan(cut *ledgerCut, fn func(ledger.Entry) error) ([]string, error) {
	ctx := context.Background()
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// A table no job of this weir has opened yet has no job and epoch
	// columns: all of its rows are read. Epochs count within a run: the
	// cut covers its run's epochs up to its own, and earlier runs' rows
	// (kept with --append) whole.
	var scoped, runs bool
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE attname IN ('job', 'epoch')) = 2, count(*) FILTER (WHERE attname = 'run') = 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND NOT attisdropped`, quoteSQL(l.table)).Scan(&scoped, &runs); err != nil {
		return nil, fmt.Errorf("ledger table %s: %w", l.table, err)
	}
	q := `SELECT id, reason, record::text, meta::text, (extract(epoch FROM arrived_at) * 1000)::bigint FROM ` + quoteSQL(l.table) +
		` WHERE reason IN ('window_expired', 'window_expired_partial')`
	var args []any
	if scoped {
		q += ` AND (job IS NULL OR job = $1)`
		args = append(args, l.job)
		switch {
		case cut == nil:
		case runs:
			q += ` AND (epoch IS NULL OR run < $2 OR run = $2 AND epoch <= $3)`
			args = append(args, cut.run, cut.epochs[l.name])
		default:
			q += ` AND (epoch IS NULL OR epoch <= $2)`
			args = append(args, cut.epochs[l.name])
		}
	}
	rows, err := tx.QueryContext(ctx, q+` ORDER BY arrived_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger table %s: %w", l.table, err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var e ledger.Entry
		var record, meta sql.NullString
		if err := rows.Scan(&e.ID, &e.Reason, &record, &meta, &e.ArrivedAt); err != nil {
			return bad, err
		}
		// meta is the entry's line without id, reason and record.
		if !record.Valid || !meta.Valid || json.Unmarshal([]byte(meta.String), &e) != nil || len(e.Windows) == 0 {
			bad = append(bad, fmt.Sprintf("table %s, entry %s: no readable record or meta", l.table, e.ID))
			continue
		}
		e.Kind, e.Record, e.Key = "late", json.RawMessage(record.String), compactBytes(e.Key)
		if err := fn(e); err != nil {
			return bad, err
		}
	}
	return bad, rows.Err()
}

// compactBytes is b without the spaces jsonb puts in its text.
func compactBytes(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func (l *pgLedger) close() error {
	if l.conn != nil {
		l.conn.Close()
	}
	return l.db.Close()
}

// ScanLedger calls fn for every entry of the job's late-data ledger (a
// ledger directory, a Postgres table or Kafka topics; and late_partial's,
// if it has its own) and returns the entries it could not read, each said
// where it is and why, and where it read (ledger directories by their
// path from dir, the spec's directory).
func ScanLedger(p *spec.Plan, dir string, fn func(ledger.Entry) error) (bad, where []string, err error) {
	src, err := openLedgerSource(p, BackfillOptions{Dir: dir, DryRun: true})
	if err != nil {
		return nil, nil, err
	}
	defer src.close()
	srcs, ok := src.(multiLedger)
	if !ok {
		srcs = multiLedger{src}
	}
	for _, s := range srcs {
		if f, ok := s.(*fileLedger); ok {
			rel, err := filepath.Rel(dir, f.dir)
			if err != nil {
				rel = f.dir
			}
			where = append(where, rel)
		} else {
			where = append(where, s.describe(nil))
		}
	}
	bad, err = src.scan(nil, fn)
	return bad, where, err
}
