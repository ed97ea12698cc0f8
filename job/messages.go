package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// msgSink is a sink its connector kind opened as a sink of messages
// (connector.SinkKind.OpenMessages), in one role: a resultSink of
// results, or a recordSink of late records or dead letters. Its calls are
// serialized by output.mu.
//
// A Transactional sink is pre-committed at each checkpoint (preCommit),
// the state it returns kept in the checkpoint's output part by the sink's
// name, committed once the checkpoint is durable (committed), recovered
// from that state when a run resumes (openMessages), and aborted when a
// run fails (close); the output at the end of a run that ended well is
// pre-committed and committed as epoch 0. Any other sink is flushed at
// each checkpoint and at that end.
type msgSink struct {
	s    connector.Sink[connector.Message]
	txn  connector.Transactional // s, when it is one
	name string
	j    *Job
	// plan is the plan as it reads for the window whose results the sink
	// writes (set for a results sink; the job's plan otherwise).
	plan *spec.Plan
	// cols are a results sink's columns (spec.Sink.Columns); keyCols
	// those of its primary key (a Kafka topic's message key, and a
	// retraction its tombstone), nil without one.
	cols, keyCols []spec.Column
	// discard: the sink keeps nothing (connector.Discarder) and its
	// results' columns count nothing (no expression, no cast), so a
	// result's message is not made.
	discard bool
	// one is the message being written; entry, val, key, id, hbuf and hdr
	// are its reused parts.
	one                [1]connector.Message
	entry              connector.Entry
	val, key, id, hbuf []byte
	hdr                [3]connector.Header
	closed             bool
}

// openMessages opens sink op, of a kind with OpenMessages: fresh when the
// run starts its output over, recovered to the restored checkpoint's state
// when it resumes one that had the sink, kept as it is when a fresh run
// appends. The sink it returns with an error is nil.
func (j *Job) openMessages(op *spec.SinkOp, open func(context.Context, connector.MessagesOpen) (connector.Sink[connector.Message], error), role connector.SinkRole, stdout io.Writer, restoring bool) (*msgSink, error) {
	fresh := j.startsFresh(op.Name) && !j.appendRuns
	settings := spec.SinkSettings(op.Config)
	path := settings.String("path")
	var earlier int64 // the bytes of earlier runs a fresh file sink starts over
	if full := (RunOptions{Dir: j.runDir}).Path(path); fresh && path != "" && op.Config.Type == "jsonl" && !connector.StreamPath(full) {
		if fi, err := os.Stat(full); err == nil && fi.Mode().IsRegular() {
			earlier = fi.Size()
		}
	}
	s, err := open(j.sinkCtx, connector.MessagesOpen{Settings: settings, Output: op.Path, Name: op.Name, Role: role,
		Path: RunOptions{Dir: j.runDir}.Path, Job: j.plan.Name, Fresh: fresh, Stdout: stdout, Open: j.openMsgs(), Now: j.env.Options().Clock.Now,
		Run:    func() int64 { return j.out.c.Run },
		Logger: j.env.Options().Logger.With("sink", op.Name), Stopping: j.stopping})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Path, err)
	}
	if earlier > 0 {
		// As a table's rows of earlier runs are (startTable).
		j.warnOutput(fmt.Sprintf("%s: a new run of job %q: started %s over (%s of earlier runs; --append keeps them; a resume from a checkpoint keeps what it covers)",
			op.Path, j.plan.Name, path, outfmt.Bytes(earlier)))
	}
	m := &msgSink{s: s, name: op.Name, j: j, plan: j.plan}
	if role == connector.RoleResults {
		m.cols = op.Config.Columns
		m.keyCols = outfmt.KeyColumns(m.cols, op.Config.PrimaryKey)
	}
	m.txn, _ = s.(connector.Transactional)
	if d, ok := s.(connector.Discarder); ok && d.Discards() && role == connector.RoleResults {
		m.discard = !slices.ContainsFunc(m.cols, func(c spec.Column) bool { return c.Expr != "" || c.Decimal != nil })
	}
	if r, ok := s.(connector.RunKeeper); ok && j.appendRuns && j.startsFresh(op.Name) {
		// Earlier runs' output stays; this run's id goes above theirs.
		last, err := r.MaxRun(j.sinkCtx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", op.Path, err), s.Close())
		}
		j.noteRun(last)
	}
	if restoring && !j.startsFresh(op.Name) && m.txn != nil {
		if err := m.txn.Recover(j.sinkCtx, j.ck.restored.ID, j.out.c.sinkState(op.Name)); err != nil {
			fix := "; or start over with --fresh (the outputs start over too)"
			if strings.Contains(err.Error(), "--fresh") {
				fix = " (the outputs start over too)" // the sink said so already
			}
			return nil, errors.Join(fmt.Errorf("%s: restoring checkpoint %d: %w%s", op.Path, j.ck.restored.ID, err, fix), s.Close())
		}
	}
	j.msgs = append(j.msgs, m)
	return m, nil
}

// openMsgs are the message sinks opened so far.
func (j *Job) openMsgs() []connector.Sink[connector.Message] {
	out := make([]connector.Sink[connector.Message], len(j.msgs))
	for i, m := range j.msgs {
		out[i] = m.s
	}
	return out
}

// write writes a result: its JSON line, keyed by its key and window (or
// its primary key's columns), with the id and headers of its revision.
// With a primary key, a retraction is the key's tombstone: a message
// without a value, as Flink's upsert-kafka deletes a row.
func (m *msgSink) write(r window.Result[string, []byte]) error {
	if m.discard {
		return nil
	}
	run := m.j.run
	m.val = outfmt.AppendResult(m.val[:0], m.plan, m.cols, m.j.nulls, run, r)
	m.key = outfmt.AppendMessageKey(m.key[:0], m.plan, m.keyCols, run, r)
	id := strconv.AppendInt(append(append(m.id[:0], m.key...), '#'), run, 10)
	id = strconv.AppendInt(append(id, '#'), r.Pane, 10)
	if r.Firing == window.Retract {
		id = append(id, "#retract"...)
	}
	m.id = id
	h := append(m.hbuf[:0], r.Firing.String()...)
	f := len(h)
	h = strconv.AppendInt(h, run, 10)
	rn := len(h)
	h = strconv.AppendInt(h, r.Pane, 10)
	m.hbuf = h
	m.hdr = [3]connector.Header{{Key: "weir-firing", Value: h[:f:f]}, {Key: "weir-run", Value: h[f:rn:rn]}, {Key: "weir-pane", Value: h[rn:]}}
	val := m.val
	if r.Firing == window.Retract && len(m.keyCols) > 0 {
		val = nil
	}
	m.one[0] = connector.Message{Value: val, Key: m.key, ID: string(id), Headers: m.hdr[:]}
	return m.send()
}

// writeRecord writes a late record or dead letter: its line, keyed and
// identified by its entry id, with its reason.
func (m *msgSink) writeRecord(it *item) error {
	m.key = append(m.key[:0], it.id...)
	m.hbuf = append(m.hbuf[:0], it.reason...)
	m.hdr[0] = connector.Header{Key: "weir-reason", Value: m.hbuf}
	m.entry = connector.Entry{ID: it.id, Reason: it.reason, Record: it.raw, Meta: it.meta, Arrived: time.UnixMilli(it.arrived)}
	m.one[0] = connector.Message{Value: it.line, Key: m.key, ID: it.id, Headers: m.hdr[:1], Entry: &m.entry}
	return m.send()
}

func (m *msgSink) send() error {
	err := m.s.Write(m.j.sinkCtx, m.one[:])
	m.one[0] = connector.Message{}
	return err
}

// commit is done by preCommit, for every message sink at once.
func (m *msgSink) commit() error { return nil }

// preCommit makes what was written durable at checkpoint id: a
// Transactional sink's PreCommit returns the state the checkpoint keeps;
// any other sink is flushed (state nil).
func (m *msgSink) preCommit(id int64) ([]byte, error) {
	if m.txn != nil {
		return m.txn.PreCommit(m.j.sinkCtx, id)
	}
	return nil, m.s.Flush(m.j.sinkCtx)
}

// committed commits checkpoint id's output.
func (m *msgSink) committed(id int64) error {
	if m.txn == nil {
		return nil
	}
	return m.txn.Commit(m.j.sinkCtx, id)
}

// close finishes the sink: what the end of a run that ended well
// produced is committed as epoch 0 (or flushed); after a failure a
// Transactional sink aborts what no checkpoint covers (a restart
// produces it again). Then it closes. It is idempotent (late and
// late_partial may share a sink).
func (m *msgSink) close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	ctx := m.j.sinkCtx // a sink that waits for its server waits as long as it is told to (retry_for)
	var err error
	switch {
	case m.j.execFailed || m.j.failed.Load():
		if m.txn != nil {
			// The job's context may be cancelled (the failure): the
			// abort gets its own minute to reach the server.
			actx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err = m.txn.Abort(actx)
			cancel()
		}
	case m.txn != nil:
		if _, err = m.txn.PreCommit(ctx, 0); err == nil {
			err = m.txn.Commit(ctx, 0)
		}
	default:
		err = m.s.Flush(ctx)
	}
	return errors.Join(err, m.s.Close())
}

// drain hands what the sink buffers to its readers without making it
// durable (connector.Drainer), for a job without checkpoints; o.mu is
// held.
func (m *msgSink) drain() error {
	if d, ok := m.s.(connector.Drainer); ok && !m.closed {
		return d.Drain()
	}
	return nil
}
