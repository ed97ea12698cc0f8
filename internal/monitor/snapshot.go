// Package monitor turns a running job into what the dashboard and weir
// doctor read: a snapshot of every operator, subtask and input with the
// input that holds each watermark and the chain back to its source, and a
// one-second history of the numbers that matter (lag, spread, late
// records, lateness, firing delay, state, busy and backpressured time).
//
// Missing values are JSON null with a reason next to them, never NaN: a
// watermark that does not exist yet says why.
package monitor

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// JobInfo is what the job's spec says, for relative judgements: the
// out-of-orderness bound, the allowed lateness, the window size (or
// session gap), the idle timeout and the watermark interval, in
// milliseconds (0: none).
type JobInfo struct {
	Name        string `json:"name"`
	BoundMS     int64  `json:"bound_ms"`
	LatenessMS  int64  `json:"lateness_ms"`
	WindowMS    int64  `json:"window_ms"`
	IdleMS      int64  `json:"idle_timeout_ms"`
	Parallelism int    `json:"parallelism"`
	// WatermarkIntervalMS is the processing-time period of periodic
	// watermark emission (watermark.interval; 0: every record). A
	// healthy job's lag runs up to the bound plus this interval: a
	// watermark is bound behind the newest record when it is emitted and
	// grows older until the next one.
	WatermarkIntervalMS int64 `json:"watermark_interval_ms"`
}

// Snapshot is the job at one moment.
type Snapshot struct {
	Job JobInfo `json:"job"`
	// Now is processing time (Unix ms) when the snapshot was taken.
	Now       int64      `json:"now"`
	Operators []Operator `json:"operators"`
	// Holders says, per operator that has inputs, which input holds its
	// lowest subtask watermark and the chain back to a source input.
	Holders []Holder `json:"holders"`
	Totals  Totals   `json:"totals"`
	// RecentLate are the newest too-late records, oldest first.
	RecentLate []LateEntry `json:"recent_late"`
	// Counters are the job's own counts beyond the engine's (the spec
	// runner's: timestamp_regressions, dead_letter_<reason>, ...).
	Counters map[string]int64 `json:"counters"`
	// MissingFields are the fields the spec reads that the job's first
	// records did not have.
	MissingFields []MissingField `json:"missing_fields,omitempty"`
	// RestoredAt is when the job last resumed from a checkpoint (Unix
	// ms; null: it started fresh).
	RestoredAt *int64 `json:"restored_at"`
	// Sinks are the job's sinks, each with the call in progress, if any.
	Sinks []SinkCallOut `json:"sinks"`
	// Stuck lists what had been in progress for Options.StuckAfter or
	// longer when the snapshot was taken (empty: nothing): the
	// checkpoint, a sink call, or (added when a snapshot is served) the
	// sampling of the job itself.
	Stuck []Stuck `json:"stuck"`
	// EndedAt is when the monitor first saw every operator with inputs
	// at the final watermark, the end of input (Unix ms; null: not
	// ended). Nothing holds a watermark after it.
	EndedAt *int64 `json:"ended_at"`
}

// ReachCall is the Call of a SinkCall that is a source not reaching its
// server since Since (not a sink's call: the snapshot's sinks and the
// sink metrics leave it out, the stuck list has it as a source).
const ReachCall = "reach"

// SinkCall is a call into one of the job's sinks, as the job reports it:
// the sink, the call (write, sync, pre-commit, commit) and when it began
// (Call empty and Since zero: none in progress); or a source's outage
// (ReachCall).
type SinkCall struct {
	Sink, Call string
	Since      time.Time
	// Err, for a source that does not reach its server (Call "reach"),
	// is its last failure.
	Err string
}

// SinkCallOut is a sink in a snapshot: its call in progress (call empty,
// since and for_s null: none).
type SinkCallOut struct {
	Sink  string   `json:"sink"`
	Call  string   `json:"call"`
	Since *int64   `json:"since"`
	ForS  *float64 `json:"for_s"`
}

// Stuck is something that has been in progress too long.
type Stuck struct {
	// What is checkpoint, sink or monitor; Name the checkpoint's id, the
	// sink (results, late, ...) or "sample".
	What string `json:"what"`
	Name string `json:"name"`
	// Phase is the checkpoint's phase (begin, snapshots, parts,
	// pre-commit, commit) or the sink's call (write, sync, pre-commit,
	// commit).
	Phase string `json:"phase"`
	// Since is when it began (Unix ms), ForS how long it has lasted.
	Since int64   `json:"since"`
	ForS  float64 `json:"for_s"`
	// Why says it in words.
	Why string `json:"why"`
}

// CheckpointInFlight is the checkpoint in progress.
type CheckpointInFlight struct {
	ID int64 `json:"id"`
	// Started is when it was triggered (Unix ms), AgeS how long ago.
	Started int64   `json:"started"`
	AgeS    float64 `json:"age_s"`
	// Phase is what it waits for (begin, snapshots, parts, pre-commit,
	// commit), since PhaseSince (Unix ms).
	Phase      string `json:"phase"`
	PhaseSince int64  `json:"phase_since"`
	// Acked of Subtasks took their snapshot; Written have their parts
	// written.
	Acked    int `json:"acked"`
	Written  int `json:"written"`
	Subtasks int `json:"subtasks"`
}

// Extra is what a job adds to its snapshots beyond the engine's view.
type Extra struct {
	RecentLate    []LateEntry
	Counters      map[string]int64
	RestoredAt    time.Time
	MissingFields []MissingField
}

// MissingField is a field the job's spec reads that none of its first
// records had (a misspelled name in the spec, a CSV header that does
// not match it).
type MissingField struct {
	Field string `json:"field"`
	// Path is where the spec names it (key, aggregate[0].field, ...).
	Path    string `json:"path"`
	Records int64  `json:"records"`
	// Effect says what the job does without it; Fatal that every
	// record becomes a dead letter.
	Effect string `json:"effect"`
	Fatal  bool   `json:"fatal"`
	// Fix is the did-you-mean, or the fields the records have.
	Fix string `json:"fix"`
}

// LateEntry is one too-late record, as the dashboard lists it.
type LateEntry struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	TS         int64  `json:"ts"`
	Watermark  int64  `json:"watermark"`
	LatenessMS int64  `json:"lateness_ms"`
	Windows    string `json:"windows"`
	// Why is the reason in words (window_expired: too late for every
	// window; window_expired_partial: for some).
	Why string `json:"why"`
}

// Operator is one stage of the job graph.
type Operator struct {
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	Source      bool   `json:"source"`
	// Upstream names the stages that feed it.
	Upstream []string `json:"upstream"`
	// Watermark is the lowest subtask watermark (null: some subtask has
	// none yet, WatermarkWhy says why); LagS is Now minus it in seconds;
	// SpreadS is the highest minus the lowest subtask watermark.
	Watermark    *int64    `json:"watermark"`
	WatermarkWhy string    `json:"watermark_why,omitempty"`
	LagS         *float64  `json:"lag_s"`
	SpreadS      *float64  `json:"spread_s"`
	Subtasks     []Subtask `json:"subtasks"`
	// emitted is a source's records emitted, over its channels (not
	// served: each channel's input says when the count last grew).
	emitted int64
	Window  *WindowOut `json:"window,omitempty"`
}

// WindowOut is what a window operator did so far.
type WindowOut struct {
	OnTime       int64 `json:"on_time"`
	LateAccepted int64 `json:"late_accepted"`
	SideOutput   int64 `json:"side_output"`
	Dropped      int64 `json:"dropped"`
	NoTimestamp  int64 `json:"no_timestamp"`
	Partial      int64 `json:"partial_late"`
	Misses       int64 `json:"window_misses"`
	FiredEarly   int64 `json:"fired_early"`
	FiredOnTime  int64 `json:"fired_on_time"`
	FiredLate    int64 `json:"fired_late"`
	Retractions  int64 `json:"retractions"`
	StateBytes   int64 `json:"state_bytes"`
	Windows      int64 `json:"state_windows"`
	Timers       int64 `json:"state_timers"`
	// Lateness and firing delay quantiles in seconds (0 without data).
	LatenessP50S    float64 `json:"lateness_p50_s"`
	LatenessP99S    float64 `json:"lateness_p99_s"`
	LatenessP999S   float64 `json:"lateness_p999_s"`
	LatenessCount   uint64  `json:"lateness_count"`
	FiringDelayP50S float64 `json:"firing_delay_p50_s"`
	FiringDelayP99S float64 `json:"firing_delay_p99_s"`
	// firingDelay is the histogram behind them, kept so that a history
	// point can take the quantiles of the firings in its own interval.
	firingDelay weir.Histogram
	// OldestTimer is the earliest pending event-time timer (a window end
	// or cleanup time the watermark must reach; null: none or unknown).
	OldestTimer *int64 `json:"oldest_timer"`
}

// Subtask is one subtask of an operator.
type Subtask struct {
	Index     int    `json:"index"`
	Watermark *int64 `json:"watermark"`
	// State is active, idle or "no watermark yet"; Why explains.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// Inputs are its channels (upstream subtasks) or, for a source, what
	// its reader reports (Kafka partitions).
	Inputs         []Input `json:"inputs"`
	BusyS          float64 `json:"busy_s"`
	BackpressuredS float64 `json:"backpressured_s"`
	IdleS          float64 `json:"idle_s"`
	RecordsIn      int64   `json:"records_in"`
	Queue          int     `json:"queue"`
	QueueCap       int     `json:"queue_cap"`
	// CheckpointDelayS is the newest checkpoint's start delay here.
	CheckpointDelayS float64 `json:"checkpoint_delay_s"`
}

// Input is one input of a subtask.
type Input struct {
	Name      string `json:"name"`
	Watermark *int64 `json:"watermark"`
	// State: active, idle, paused, or "no watermark yet"; Why explains
	// the last two and idle.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// Backlog: records left to read (null: not known; sources only).
	Backlog *int64 `json:"backlog"`
	// LastRecordAgeS: seconds since its last record (null: none yet or
	// not known).
	LastRecordAgeS *float64 `json:"last_record_age_s"`
	// MaxEventTime is the largest event time read (sources; null: none
	// or not reported).
	MaxEventTime *int64 `json:"max_event_time"`
	// IdleFlips counts its idle/active changes in the last 10 minutes.
	IdleFlips int `json:"idle_flips"`
	// Holding: this input's watermark is the subtask's.
	Holding bool `json:"holding"`
	// Upstream is the operator and subtask the channel comes from.
	Upstream *Ref `json:"upstream,omitempty"`
}

// SourceInput names an input of a source subtask.
type SourceInput struct {
	Ref
	Input string `json:"input"`
}

// Ref names a subtask.
type Ref struct {
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
}

// Holder is the input that holds an operator's watermark.
type Holder struct {
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	Input    string `json:"input"`
	// Chain runs from the operator back to the source input that holds
	// it, as "operator[subtask] input" steps.
	Chain []string `json:"chain"`
	// Source is the chain's last step when it is a source input (a
	// Kafka partition, a file channel): what holds the watermark.
	Source *SourceInput `json:"source,omitempty"`
	// Reason says in words why the chain's last input holds.
	Reason string `json:"reason"`
	// HoldingForS is how long the same source input has held it (0 the
	// first time it is seen, and once Ended).
	HoldingForS float64 `json:"holding_for_s"`
	// Ended says the operator has the final watermark (the end of its
	// input): nothing holds it, Chain is empty and Reason says so.
	Ended bool `json:"ended,omitempty"`
}

// Totals are the job's record counts.
type Totals struct {
	RecordsIn    int64 `json:"records_in"`
	OnTime       int64 `json:"on_time"`
	LateAccepted int64 `json:"late_accepted"`
	SideOutput   int64 `json:"side_output"`
	Dropped      int64 `json:"dropped"`
	DeadLetters  int64 `json:"dead_letters"`
	Results      int64 `json:"results"`
	Checkpoints  int64 `json:"checkpoints"`
	// LastCheckpointAgeS is null before the first checkpoint.
	LastCheckpointAgeS *float64 `json:"last_checkpoint_age_s"`
	// CheckpointInFlight is the checkpoint in progress (null: none).
	CheckpointInFlight *CheckpointInFlight `json:"checkpoint_in_flight"`
}

// sinkCalls converts the sinks' calls for a snapshot.
func sinkCalls(calls []SinkCall, now time.Time) []SinkCallOut {
	out := make([]SinkCallOut, 0, len(calls))
	for _, c := range calls {
		if c.Call == ReachCall {
			continue // a source's outage: the stuck list tells it
		}
		o := SinkCallOut{Sink: c.Sink, Call: c.Call}
		if !c.Since.IsZero() {
			ms := c.Since.UnixMilli()
			o.Since, o.ForS = &ms, fptr(now.Sub(c.Since).Seconds())
		}
		out = append(out, o)
	}
	return out
}

// FindStuck lists the checkpoint and the sink calls in progress for after or
// longer at now (an empty list, not nil, when none is), not counting the
// time the process did not run meanwhile (PausedBetween).
func FindStuck(cs weir.CheckpointStats, sinks []SinkCall, now time.Time, after time.Duration) []Stuck {
	out := []Stuck{}
	if f := cs.InFlight; f.ID != 0 && ranFor(f.Started, now) >= after {
		var at string
		switch f.Phase {
		case "begin":
			at = "the checkpoint store is opening it"
		case "snapshots":
			at = fmt.Sprintf("%d of %d subtasks have taken their snapshot (the others are busy, backpressured or waiting for barriers)", f.Acked, f.Subtasks)
		case "parts":
			at = fmt.Sprintf("the parts of %d of %d subtasks are written", f.Written, f.Subtasks)
		case "pre-commit":
			at = "the sinks are making its output durable"
		case "commit":
			at = "the checkpoint store is committing it"
		}
		age := now.Sub(f.Started).Seconds()
		out = append(out, Stuck{What: "checkpoint", Name: strconv.FormatInt(f.ID, 10), Phase: f.Phase, Since: f.Started.UnixMilli(), ForS: age,
			Why: fmt.Sprintf("checkpoint %d has been in progress for %.0fs (since %s), in phase %s for %.0fs: %s",
				f.ID, age, f.Started.UTC().Format(time.RFC3339), f.Phase, now.Sub(f.PhaseSince).Seconds(), at)})
	}
	for _, c := range sinks {
		if c.Since.IsZero() || ranFor(c.Since, now) < after {
			continue
		}
		age := now.Sub(c.Since).Seconds()
		if c.Call == ReachCall {
			out = append(out, Stuck{What: "source", Name: c.Sink, Phase: c.Call, Since: c.Since.UnixMilli(), ForS: age,
				Why: fmt.Sprintf("%s has not reached its server for %.0fs (since %s): %s; no record comes meanwhile, and the watermark waits", c.Sink, age, c.Since.UTC().Format(time.RFC3339), c.Err)})
			continue
		}
		out = append(out, Stuck{What: "sink", Name: c.Sink, Phase: c.Call, Since: c.Since.UnixMilli(), ForS: age,
			Why: fmt.Sprintf("sink %s has been in a %s call for %.0fs (since %s)", c.Sink, c.Call, age, c.Since.UTC().Format(time.RFC3339))})
	}
	return out
}

// ranFor is how long the process ran from since to now: what is in
// progress since then is judged on it, not on a pause of the process.
func ranFor(since, now time.Time) time.Duration {
	return now.Sub(since) - PausedBetween(since, now)
}

func wmPtr(t etime.Time) *int64 {
	if t == etime.MinTime {
		return nil
	}
	v := int64(t)
	return &v
}

func fptr(v float64) *float64 { return &v }

// take builds a snapshot of env at now; cs is env's checkpoint stats,
// read once by the caller, which also judges them (stuck).
func take(env *weir.Env, cs weir.CheckpointStats, info JobInfo, now time.Time) Snapshot {
	s := Snapshot{Job: info, Now: now.UnixMilli()}
	nowT := etime.FromTime(now)
	graph := env.Graph()
	wms := env.Watermarks()
	stats := env.SubtaskStats()
	inputs := env.SourceInputs()
	rep := env.Report()
	states := env.OperatorStates()
	hists := env.WindowHists()
	for _, g := range graph {
		op := Operator{Name: g.Name, Parallelism: g.Parallelism, Source: g.Source, Subtasks: make([]Subtask, g.Parallelism), emitted: rep.SourceRecords[g.Name]}
		for _, gate := range g.Gates {
			for _, f := range gate {
				if !slices.Contains(op.Upstream, f.Stage) {
					op.Upstream = append(op.Upstream, f.Stage)
				}
			}
		}
		for i := range op.Subtasks {
			op.Subtasks[i] = Subtask{Index: i, State: "no watermark yet", Why: notStarted}
		}
		for _, w := range wms {
			if w.Stage != g.Name || w.Subtask >= len(op.Subtasks) {
				continue
			}
			st := &op.Subtasks[w.Subtask]
			st.Watermark = wmPtr(w.Watermark)
			st.State, st.Why = "active", ""
			switch {
			case w.Idle:
				st.State, st.Why = "idle", "every input is idle"
			case w.Watermark == etime.MinTime:
				st.State = "no watermark yet"
			}
			if !g.Source {
				st.Inputs = channelInputs(g, w)
			}
		}
		for _, x := range stats {
			if x.Stage == g.Name && x.Subtask < len(op.Subtasks) {
				st := &op.Subtasks[x.Subtask]
				st.BusyS, st.BackpressuredS, st.IdleS = x.Busy.Seconds(), x.Backpressured.Seconds(), x.Idle.Seconds()
				st.RecordsIn, st.Queue, st.QueueCap = x.RecordsIn, x.QueueLen, x.QueueCap
				st.CheckpointDelayS = x.CheckpointDelay.Seconds()
			}
		}
		if g.Source {
			for _, si := range inputs {
				if si.Source == g.Name && si.Channel < len(op.Subtasks) {
					op.Subtasks[si.Channel].Inputs = sourceInputs(si.Inputs, now)
				}
			}
		}
		for i := range op.Subtasks {
			st := &op.Subtasks[i]
			if st.State == "no watermark yet" && st.Why == "" {
				st.Why = noWatermarkWhy(g, st)
			}
			markHolding(st)
		}
		op.Watermark, op.WatermarkWhy, op.LagS, op.SpreadS = operatorWatermark(op.Subtasks, nowT)
		if c, ok := rep.Windows[g.Name]; ok {
			h := hists[g.Name]
			st := states[g.Name]
			op.Window = &WindowOut{OnTime: c.Accepted - c.AcceptedLate, LateAccepted: c.AcceptedLate, SideOutput: c.LateSideOutput,
				Dropped: c.LateDropped, NoTimestamp: c.NoTimestamp, Partial: c.PartialSideOutput, Misses: c.WindowMisses,
				FiredEarly: c.FiredEarly, FiredOnTime: c.FiredOnTime, FiredLate: c.FiredLate, Retractions: c.Retractions,
				StateBytes: st.Bytes, Windows: st.OpenWindows, Timers: st.Timers,
				LatenessP50S: h.Lateness.Quantile(0.5), LatenessP99S: h.Lateness.Quantile(0.99),
				LatenessP999S: h.Lateness.Quantile(0.999), LatenessCount: h.Lateness.Count(),
				FiringDelayP50S: h.FiringDelay.Quantile(0.5), FiringDelayP99S: h.FiringDelay.Quantile(0.99), firingDelay: h.FiringDelay}
			if st.HasOldest {
				op.Window.OldestTimer = wmPtr(st.Oldest)
			}
			s.Totals.OnTime += op.Window.OnTime
			s.Totals.LateAccepted += c.AcceptedLate
			s.Totals.SideOutput += c.LateSideOutput
			s.Totals.Dropped += c.LateDropped
			s.Totals.Results += c.FiredEarly + c.FiredOnTime + c.FiredLate + c.Retractions
		}
		s.Operators = append(s.Operators, op)
	}
	sourceWatermarks(s.Operators, nowT)
	for _, n := range rep.SourceRecords {
		s.Totals.RecordsIn += n
	}
	s.Totals.DeadLetters = rep.DeadLetters
	s.Totals.Checkpoints = cs.Completed
	if !cs.LastCompleted.IsZero() {
		s.Totals.LastCheckpointAgeS = fptr(now.Sub(cs.LastCompleted).Seconds())
	}
	if f := cs.InFlight; f.ID != 0 {
		s.Totals.CheckpointInFlight = &CheckpointInFlight{ID: f.ID, Started: f.Started.UnixMilli(), AgeS: now.Sub(f.Started).Seconds(),
			Phase: f.Phase, PhaseSince: f.PhaseSince.UnixMilli(), Acked: f.Acked, Written: f.Written, Subtasks: f.Subtasks}
	}
	s.Holders = holders(s.Operators)
	return s
}

// sourceWatermarks sets each source subtask's watermark to what it sent
// downstream (the channel state its downstream subtasks keep; a source
// has no input watermark of its own), and its operator's watermark.
func sourceWatermarks(ops []Operator, now etime.Time) {
	sent := map[Ref]*int64{}
	idle := map[Ref]bool{}
	for i := range ops {
		for _, st := range ops[i].Subtasks {
			for _, in := range st.Inputs {
				if in.Upstream == nil {
					continue
				}
				r := *in.Upstream
				if in.Watermark != nil && (sent[r] == nil || *in.Watermark > *sent[r]) {
					sent[r] = in.Watermark
				}
				idle[r] = idle[r] || in.State == "idle"
			}
		}
	}
	for i := range ops {
		op := &ops[i]
		if !op.Source {
			continue
		}
		for j := range op.Subtasks {
			st := &op.Subtasks[j]
			r := Ref{Operator: op.Name, Subtask: st.Index}
			switch {
			case idle[r]:
				st.Watermark, st.State, st.Why = sent[r], "idle", "every input of this channel is idle"
			case sent[r] != nil && st.Watermark == nil:
				st.Watermark, st.State, st.Why = sent[r], "active", ""
			}
			if st.Watermark == nil && st.State == "no watermark yet" {
				if h := holdingInput(st); h != nil {
					st.Why = "input " + h.Name + ": " + h.Why
				}
			}
		}
		op.Watermark, op.WatermarkWhy, op.LagS, op.SpreadS = operatorWatermark(op.Subtasks, now)
	}
}

// channelInputs names a subtask's channels by the upstream subtask each
// comes from.
func channelInputs(g weir.StageInfo, w weir.SubtaskWatermark) []Input {
	var out []Input
	for gi, chans := range w.Channels {
		for ci, c := range chans {
			in := Input{Name: fmt.Sprintf("gate %d channel %d", gi, ci), Watermark: wmPtr(c.Watermark), State: "active"}
			if gi < len(g.Gates) {
				for _, f := range g.Gates[gi] {
					if ci >= f.Base && ci < f.Base+f.Par {
						in.Upstream = &Ref{Operator: f.Stage, Subtask: ci - f.Base}
						in.Name = f.Stage + "[" + strconv.Itoa(ci-f.Base) + "]"
					}
				}
			}
			switch {
			case c.Idle:
				in.State, in.Why = "idle", "the upstream subtask is idle"
			case c.Watermark == etime.MinTime:
				in.State, in.Why = "no watermark yet", "the upstream subtask has sent none"
			case !c.Aligned:
				in.State, in.Why = "catching up", "became active again below the subtask's watermark; it joins the minimum when it catches up"
			}
			out = append(out, in)
		}
	}
	return out
}

// sourceInputs converts what a source reader reports.
func sourceInputs(in []weir.InputStatus, now time.Time) []Input {
	out := make([]Input, 0, len(in))
	for _, x := range in {
		i := Input{Name: x.Name, Watermark: wmPtr(x.Watermark), State: "active", MaxEventTime: wmPtr(x.MaxEventTime)}
		if x.Backlog >= 0 {
			b := x.Backlog
			i.Backlog = &b
		}
		if !x.LastRecord.IsZero() {
			i.LastRecordAgeS = fptr(now.Sub(x.LastRecord).Seconds())
		}
		switch {
		case x.Idle:
			i.State, i.Why = "idle", "no record for the idle timeout and caught up with the broker"
		case x.Paused:
			i.State, i.Why = "paused", fmt.Sprintf("ahead of the slowest input by more than max_drift (paused %.0fs in all)", x.PausedFor.Seconds())
		case x.Watermark == etime.MinTime && x.LastRecord.IsZero():
			i.State, i.Why = "no watermark yet", "no record read yet"
			if i.Backlog != nil && *i.Backlog > 0 {
				i.Why = fmt.Sprintf("no record read yet, %d waiting", *i.Backlog)
			}
		case x.Watermark == etime.MinTime:
			i.State, i.Why = "no watermark yet", "records read, no watermark tick yet"
		}
		out = append(out, i)
	}
	return out
}

// noWatermarkWhy explains a subtask without a watermark.
func noWatermarkWhy(g weir.StageInfo, st *Subtask) string {
	if g.Source {
		return "its source has emitted no watermark yet"
	}
	for _, in := range st.Inputs {
		if in.Watermark == nil && in.State != "idle" {
			return "input " + in.Name + " has sent no watermark yet"
		}
	}
	return "no input has sent a watermark yet"
}

// markHolding marks the input whose watermark is the subtask's: the
// lowest among active ones (an active input without a watermark holds
// it at "none"). None holds the final watermark.
func markHolding(st *Subtask) {
	if st.Watermark != nil && etime.Time(*st.Watermark) == etime.MaxTime {
		return
	}
	best := -1
	for i, in := range st.Inputs {
		if in.State == "idle" || in.State == "paused" || in.State == "catching up" {
			continue
		}
		if best < 0 || less(in.Watermark, st.Inputs[best].Watermark) {
			best = i
		}
	}
	if best >= 0 {
		st.Inputs[best].Holding = true
	}
}

// less orders watermarks with nil (none) lowest.
func less(a, b *int64) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	return *a < *b
}

func operatorWatermark(subs []Subtask, now etime.Time) (*int64, string, *float64, *float64) {
	var lo, hi *int64
	for i := range subs {
		w := subs[i].Watermark
		if w == nil {
			if subs[i].State == "idle" {
				continue
			}
			return nil, fmt.Sprintf("subtask %d: %s", subs[i].Index, subs[i].Why), nil, nil
		}
		if lo == nil || *w < *lo {
			lo = w
		}
		// A subtask past the end of its input (MAX) is not spread: the
		// others get the final watermark in a moment.
		if etime.Time(*w) != etime.MaxTime && (hi == nil || *w > *hi) {
			hi = w
		}
	}
	if hi == nil {
		hi = lo
	}
	if lo == nil {
		return nil, "every subtask is idle", nil, nil
	}
	lag := float64(now-etime.Time(*lo)) / 1000
	if etime.Time(*lo) == etime.MaxTime {
		lag = 0
	}
	spread := float64(*hi-*lo) / 1000
	return lo, "", &lag, &spread
}

// holders finds, per operator with inputs, the subtask with the lowest
// watermark and follows its holding input upstream to a source input.
func holders(ops []Operator) []Holder {
	byName := map[string]*Operator{}
	for i := range ops {
		byName[ops[i].Name] = &ops[i]
	}
	var out []Holder
	for i := range ops {
		op := &ops[i]
		if op.Source {
			continue
		}
		sub := lowestSubtask(op)
		if sub == nil {
			continue
		}
		h := Holder{Operator: op.Name, Subtask: sub.Index}
		if sub.Watermark != nil && etime.Time(*sub.Watermark) == etime.MaxTime {
			h.Ended, h.Reason = true, "the input ended: every subtask has the final watermark, nothing holds it"
			out = append(out, h)
			continue
		}
		cur, curOp := sub, op
		for steps := 0; cur != nil && steps < 64; steps++ {
			in := holdingInput(cur)
			if in == nil {
				h.Reason = cur.Why
				break
			}
			h.Chain = append(h.Chain, fmt.Sprintf("%s[%d] %s", curOp.Name, cur.Index, in.Name))
			if len(h.Chain) == 1 {
				h.Input = in.Name
			}
			if in.Upstream == nil {
				if curOp.Source {
					h.Source = &SourceInput{Ref: Ref{Operator: curOp.Name, Subtask: cur.Index}, Input: in.Name}
				}
				h.Reason = inputReason(in)
				break
			}
			up := byName[in.Upstream.Operator]
			if up == nil || in.Upstream.Subtask >= len(up.Subtasks) {
				break
			}
			curOp, cur = up, &up.Subtasks[in.Upstream.Subtask]
		}
		out = append(out, h)
	}
	return out
}

func lowestSubtask(op *Operator) *Subtask {
	var best *Subtask
	for i := range op.Subtasks {
		st := &op.Subtasks[i]
		if st.State == "idle" {
			continue
		}
		if best == nil || less(st.Watermark, best.Watermark) {
			best = st
		}
	}
	return best
}

func holdingInput(st *Subtask) *Input {
	for i := range st.Inputs {
		if st.Inputs[i].Holding {
			return &st.Inputs[i]
		}
	}
	return nil
}

// inputReason says why a source input holds the watermark.
func inputReason(in *Input) string {
	age := "no record yet"
	if in.LastRecordAgeS != nil {
		age = fmt.Sprintf("last record %.0fs ago", *in.LastRecordAgeS)
	}
	backlog := "backlog unknown"
	if in.Backlog != nil {
		backlog = fmt.Sprintf("backlog %d", *in.Backlog)
	}
	switch {
	case in.Watermark == nil:
		return fmt.Sprintf("%s has no watermark yet (%s; %s)", in.Name, backlog, age)
	case in.Backlog != nil && *in.Backlog > 0:
		return fmt.Sprintf("%s is the slowest input and has data waiting (%s; %s): it is behind, not idle", in.Name, backlog, age)
	}
	return fmt.Sprintf("%s is the slowest input (%s; %s)", in.Name, backlog, age)
}
