package pgio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/ledger"
)

// openLedger opens a job spec's Postgres late table as the job's
// late-data ledger (connector.SinkKind.OpenLedger). Its rows (a
// RecordSink's: id, reason, record, meta, arrived_at, epoch) are
// committed with the live job's checkpoints, each checkpoint's as its
// epoch, which is the sink's state in the checkpoint: a scan reads those
// of the cut's epochs and before (and rows of no epoch, from older weir)
// in one snapshot taken at its start, since a restore of the live job
// deletes the rows of later epochs. The single-writer lock of backfills
// is a session advisory lock on the table's name, released when the
// connection ends (a killed backfill never leaves it held).
func openLedger(ctx context.Context, o connector.LedgerOpen) (connector.LedgerReader, error) {
	table := o.Settings.String("table")
	timeout, _ := o.Settings.Duration("timeout")
	var query string
	if o.Lock {
		query = `SELECT pg_try_advisory_lock(hashtext($1))`
	}
	url, name, err := InSchema(o.Settings.String("url"), table)
	if err != nil {
		return nil, fmt.Errorf("%s: pgio: %w", o.Output, err)
	}
	conn, ok, err := sessionLock(ctx, url, "weir-ledger", timeout, query, "weir backfill "+table)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: pgio: %w", o.Output, err)
	case !ok:
		return nil, fmt.Errorf("another backfill of the ledger table %s is running (it holds the advisory lock on its name); wait for it to end", table)
	}
	r := &ledgerTable{conn: conn, table: name, job: o.Job}
	return r, nil
}

// ledgerTable reads a Postgres late table.
type ledgerTable struct {
	conn  *pgx.Conn // holds the advisory lock
	table string
	job   string // the job whose rows are read (with those of no job)
}

// epoch is the epoch cut's state names (0: none committed yet).
func (l *ledgerTable) epoch(cut *connector.LedgerCut) (int64, error) {
	if cut == nil || cut.State == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(cut.State), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ledger table %s: the checkpoint's epoch %q is corrupt", l.table, cut.State)
	}
	return n, nil
}

func (l *ledgerTable) Describe(cut *connector.LedgerCut) string {
	if cut == nil {
		return "job " + l.job + "'s rows of table " + l.table + " committed at the start"
	}
	epoch, _ := l.epoch(cut)
	return fmt.Sprintf("job %s's rows of table %s up to checkpoint epoch %d", l.job, l.table, epoch)
}

func (l *ledgerTable) Where() string { return l.Describe(nil) }

func (l *ledgerTable) Scan(ctx context.Context, cut *connector.LedgerCut, fn func(line []byte) error) ([]string, error) {
	epoch, err := l.epoch(cut)
	if err != nil {
		return nil, err
	}
	tx, err := l.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	// A table no job of this weir has opened yet has no job and epoch
	// columns: all of its rows are read. Epochs count within a run: the
	// cut covers its run's epochs up to its own, and earlier runs' rows
	// (kept with --append) whole.
	qt := quoteIdent(l.table)
	var scoped, runs bool
	if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attname IN ('job', 'epoch')) = 2, count(*) FILTER (WHERE attname = 'run') = 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND NOT attisdropped`, qt).Scan(&scoped, &runs); err != nil {
		return nil, fmt.Errorf("ledger table %s: %w", l.table, err)
	}
	q := `SELECT id, reason, record::text, meta::text, (extract(epoch FROM arrived_at) * 1000)::bigint FROM ` + qt +
		` WHERE reason IN ('window_expired', 'window_expired_partial')`
	var args []any
	if scoped {
		q += ` AND (job IS NULL OR job = $1)`
		args = append(args, l.job)
		switch {
		case cut == nil:
		case runs:
			q += ` AND (epoch IS NULL OR run < $2 OR run = $2 AND epoch <= $3)`
			args = append(args, cut.Run, epoch)
		default:
			q += ` AND (epoch IS NULL OR epoch <= $2)`
			args = append(args, epoch)
		}
	}
	rows, err := tx.Query(ctx, q+` ORDER BY arrived_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger table %s: %w", l.table, err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var e ledger.Entry
		var record, meta *string
		if err := rows.Scan(&e.ID, &e.Reason, &record, &meta, &e.ArrivedAt); err != nil {
			return bad, err
		}
		// meta is the entry's line without id, reason and record.
		if record == nil || meta == nil || json.Unmarshal([]byte(*meta), &e) != nil || len(e.Windows) == 0 {
			bad = append(bad, fmt.Sprintf("table %s, entry %s: no readable record or meta", l.table, e.ID))
			continue
		}
		e.Kind, e.Record, e.Key = "late", json.RawMessage(*record), compactJSON(e.Key)
		line, err := json.Marshal(e)
		if err != nil {
			return bad, err
		}
		if err := fn(line); err != nil {
			return bad, err
		}
	}
	return bad, rows.Err()
}

// compactJSON is b without the spaces jsonb puts in its text.
func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func (l *ledgerTable) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.conn.Close(ctx)
}
