package doctor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/monitor"
)

// TestRules runs the fixtures in testdata/: one per rule, each a
// synthetic job (its spec's bound, lateness, window, idle timeout), a
// history of points, a snapshot, and the expected diagnosis.
//
//	job bound=30s lateness=10m window=5m idle=1m
//	history minutes=10 step=10s     one "op.field = value" per line:
//	                                a number, none, ramp(a, b) from the
//	                                first point to the last, or
//	                                step(a, b, minute)
//	snapshot                        op, input, holder, counter, restored
//	                                and records_in lines (see build)
//	diagnose [thresholds...]        the report, as weir doctor prints it
func TestRules(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var d Dump
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "job":
				d = Dump{}
				for _, a := range td.CmdArgs {
					ms := durArg(t, a.Vals[0])
					switch a.Key {
					case "bound":
						d.Snapshot.Job.BoundMS = ms
					case "lateness":
						d.Snapshot.Job.LatenessMS = ms
					case "window":
						d.Snapshot.Job.WindowMS = ms
					case "idle":
						d.Snapshot.Job.IdleMS = ms
					default:
						t.Fatalf("job: unknown %s", a.Key)
					}
				}
				return ""
			case "history":
				d.History = history(t, td)
				if n := len(d.History); n > 0 {
					d.Snapshot.Now = d.History[n-1].T
				}
				return ""
			case "snapshot":
				build(t, &d.Snapshot, td.Input)
				return ""
			case "diagnose":
				var th Thresholds
				for _, a := range td.CmdArgs {
					v, _ := strconv.ParseFloat(a.Vals[0], 64)
					switch a.Key {
					case "lag_high_s":
						th.LagHighS = v
					default:
						t.Fatalf("diagnose: unknown %s", a.Key)
					}
				}
				r := Diagnose(d, th)
				if _, err := json.Marshal(r); err != nil {
					t.Fatal(err)
				}
				return r.Text()
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

const t0 = 1767225600000 // 2026-01-01: the synthetic histories' start

func durArg(t *testing.T, s string) int64 {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d.Milliseconds()
}

// value evaluates a history expression at point i of n (m minutes).
func value(t *testing.T, expr string, i, n int, minutes float64) *float64 {
	expr = strings.TrimSpace(expr)
	frac := 0.0
	if n > 1 {
		frac = float64(i) / float64(n-1)
	}
	args := func(name string) []float64 {
		in := strings.TrimSuffix(strings.TrimPrefix(expr, name+"("), ")")
		var out []float64
		for _, a := range strings.Split(in, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
			if err != nil {
				t.Fatalf("%q: %v", expr, err)
			}
			out = append(out, v)
		}
		return out
	}
	var v float64
	switch {
	case expr == "none":
		return nil
	case strings.HasPrefix(expr, "ramp("):
		a := args("ramp")
		v = a[0] + (a[1]-a[0])*frac
	case strings.HasPrefix(expr, "seq("):
		// seq(a, b, c): the i-th point's value, the last one repeating.
		a := args("seq")
		v = a[min(i, len(a)-1)]
	case strings.HasPrefix(expr, "step("):
		a := args("step")
		v = a[0]
		if frac*minutes >= a[2] {
			v = a[1]
		}
	default:
		var err error
		if v, err = strconv.ParseFloat(expr, 64); err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
	}
	return &v
}

func history(t *testing.T, td *datadriven.TestData) []monitor.Point {
	minutes, step := 10.0, 10*time.Second
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "minutes":
			minutes, _ = strconv.ParseFloat(a.Vals[0], 64)
		case "step":
			step, _ = time.ParseDuration(a.Vals[0])
		}
	}
	n := int(time.Duration(minutes*float64(time.Minute))/step) + 1
	pts := make([]monitor.Point, n)
	for i := range pts {
		pts[i] = monitor.Point{T: t0 + int64(i)*step.Milliseconds(), Ops: map[string]monitor.OpPoint{}}
	}
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lhs, expr, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("history line %q", line)
		}
		op, field, _ := strings.Cut(strings.TrimSpace(lhs), ".")
		for i := range pts {
			v := value(t, expr, i, n, minutes)
			if op == "job" {
				setJob(t, &pts[i].Job, field, v)
				continue
			}
			o := pts[i].Ops[op]
			setOp(t, &o, field, v)
			pts[i].Ops[op] = o
		}
	}
	return pts
}

func setOp(t *testing.T, o *monitor.OpPoint, field string, v *float64) {
	f := 0.0
	if v != nil {
		f = *v
	}
	switch field {
	case "lag_s":
		o.LagS = v
	case "spread_s":
		o.SpreadS = v
	case "busy":
		o.Busy = v
	case "backpressured":
		o.Backpressured = v
	case "records_per_s":
		o.RecordsPerS = v
	case "skew":
		o.Skew = v
	case "state_bytes":
		o.StateBytes = int64(f)
	case "oldest_timer_age_s":
		o.OldestTimerAgeS = v
	case "late_accepted_per_s":
		o.LateAcceptedPerS = v
	case "side_output_per_s":
		o.SideOutputPerS = v
	case "dropped_per_s":
		o.DroppedPerS = v
	case "lateness_p50_s":
		o.LatenessP50S = f
	case "lateness_p99_s":
		o.LatenessP99S = f
	case "firing_delay_p50_s":
		o.FiringDelayP50S = f
	case "firing_delay_p99_s":
		o.FiringDelayP99S = f
	default:
		t.Fatalf("unknown operator field %s", field)
	}
}

func setJob(t *testing.T, j *monitor.JobPoint, field string, v *float64) {
	f := 0.0
	if v != nil {
		f = *v
	}
	switch field {
	case "records_in_per_s":
		j.RecordsInPerS = v
	case "backlog":
		if v != nil {
			b := int64(f)
			j.Backlog = &b
		}
	case "max_event_ahead_s":
		j.MaxEventAheadS = v
	case "regressions":
		j.Regressions = int64(f)
	case "checkpoints":
		j.Checkpoints = int64(f)
	default:
		t.Fatalf("unknown job field %s", field)
	}
}

// build makes a snapshot from lines such as
//
//	op window upstream=source wm=-400s subtasks=2 ckdelay=1,1 lateness_p999=20 lateness_count=500 state=1000
//	op source source wm=-400s
//	input source[0] partition 2 wm=none backlog=0 last=none state=active flips=0
//	holder window chain=window[0] source[0]|source[0] partition 2 for=600s
//	counter dead_letter_timestamp_unit=4
//	restored -30s
//	records_in 1000
//
// Watermarks are relative to the snapshot's time (wm=-400s), none, or a
// year (wm=y1970).
func build(t *testing.T, s *monitor.Snapshot, input string) {
	now := s.Now
	wm := func(v string) *int64 {
		switch {
		case v == "none":
			return nil
		case strings.HasPrefix(v, "y"):
			y, _ := strconv.Atoi(v[1:])
			w := time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			return &w
		}
		w := now + durArg(t, v)
		return &w
	}
	opByName := func(name string) *monitor.Operator {
		for i := range s.Operators {
			if s.Operators[i].Name == name {
				return &s.Operators[i]
			}
		}
		t.Fatalf("no operator %s", name)
		return nil
	}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		kv := map[string]string{}
		var words []string
		for _, x := range f[1:] {
			if k, v, ok := strings.Cut(x, "="); ok {
				kv[k] = v
			} else {
				words = append(words, x)
			}
		}
		switch f[0] {
		case "op":
			op := monitor.Operator{Name: words[0], Parallelism: 1}
			for _, w := range words[1:] {
				switch w {
				case "source":
					op.Source = true
				case "window":
					op.Window = &monitor.WindowOut{}
				}
			}
			if n, err := strconv.Atoi(kv["subtasks"]); err == nil {
				op.Parallelism = n
			}
			if u := kv["upstream"]; u != "" {
				op.Upstream = []string{u}
			}
			op.Watermark = wm(cmpOr(kv["wm"], "none"))
			if op.Watermark == nil {
				op.WatermarkWhy = "subtask 0: " + cmpOr(kv["why"], "no watermark yet")
			}
			delays := strings.Split(kv["ckdelay"], ",")
			for i := range op.Parallelism {
				st := monitor.Subtask{Index: i, Watermark: op.Watermark, State: "active"}
				if i < len(delays) {
					st.CheckpointDelayS, _ = strconv.ParseFloat(delays[i], 64)
				}
				op.Subtasks = append(op.Subtasks, st)
			}
			if op.Window != nil {
				op.Window.LatenessP999S, _ = strconv.ParseFloat(kv["lateness_p999"], 64)
				c, _ := strconv.Atoi(kv["lateness_count"])
				op.Window.LatenessCount = uint64(c)
				op.Window.StateBytes, _ = strconv.ParseInt(kv["state"], 10, 64)
				op.Window.Windows, _ = strconv.ParseInt(kv["windows"], 10, 64)
			}
			s.Operators = append(s.Operators, op)
		case "input":
			name, idx, _ := strings.Cut(strings.TrimSuffix(words[0], "]"), "[")
			i, _ := strconv.Atoi(idx)
			op := opByName(name)
			in := monitor.Input{Name: strings.Join(words[1:], " "), Watermark: wm(cmpOr(kv["wm"], "none")), State: cmpOr(kv["state"], "active")}
			if b := kv["backlog"]; b != "" && b != "none" {
				n, _ := strconv.ParseInt(b, 10, 64)
				in.Backlog = &n
			}
			if l := kv["last"]; l != "" && l != "none" {
				a := float64(durArg(t, l)) / 1000
				in.LastRecordAgeS = &a
			}
			in.IdleFlips, _ = strconv.Atoi(kv["flips"])
			if m := kv["max"]; m != "" {
				in.MaxEventTime = wm(m)
			}
			op.Subtasks[i].Inputs = append(op.Subtasks[i].Inputs, in)
		case "holder":
			h := monitor.Holder{Operator: words[0], Subtask: 0}
			chain := strings.Join(append([]string{kv["chain"]}, words[1:]...), " ")
			for _, step := range strings.Split(strings.TrimSpace(chain), "|") {
				h.Chain = append(h.Chain, strings.TrimSpace(step))
			}
			// The last step, "source[0] partition 2", names the source
			// input, as the monitor's holders record it.
			if last := h.Chain[len(h.Chain)-1]; strings.HasPrefix(last, "source[") {
				var sub int
				name, rest, _ := strings.Cut(last, "[")
				idx, input, _ := strings.Cut(rest, "] ")
				sub, _ = strconv.Atoi(idx)
				h.Source = &monitor.SourceInput{Ref: monitor.Ref{Operator: name, Subtask: sub}, Input: input}
			}
			h.HoldingForS = float64(durArg(t, kv["for"])) / 1000
			s.Holders = append(s.Holders, h)
		case "counter":
			if s.Counters == nil {
				s.Counters = map[string]int64{}
			}
			for k, v := range kv {
				n, _ := strconv.ParseInt(v, 10, 64)
				s.Counters[k] = n
			}
		case "restored":
			r := now + durArg(t, words[0])
			s.RestoredAt = &r
		case "missing":
			// missing path=key field=user_id records=1000 fatal=1 like=userId
			n, _ := strconv.ParseInt(kv["records"], 10, 64)
			m := monitor.MissingField{Field: kv["field"], Path: kv["path"], Records: n, Fatal: kv["fatal"] == "1",
				Effect: "every record becomes a dead letter (key_missing)", Fix: fmt.Sprintf("did you mean %q?", kv["like"])}
			if !m.Fatal {
				m.Effect = "its results are null"
			}
			s.MissingFields = append(s.MissingFields, m)
		case "records_in":
			s.Totals.RecordsIn, _ = strconv.ParseInt(words[0], 10, 64)
		case "stuck":
			// stuck WHAT NAME PHASE for=SECONDS
			d, _ := strconv.ParseFloat(kv["for"], 64)
			s.Stuck = append(s.Stuck, monitor.Stuck{What: words[0], Name: words[1], Phase: words[2], ForS: d,
				Why: fmt.Sprintf("%s %s in %s for %.0fs", words[0], words[1], words[2], d)})
		default:
			t.Fatalf("snapshot: unknown line %q", line)
		}
	}
	for i := range s.Operators {
		op := &s.Operators[i]
		if op.Watermark != nil && !atEnd(op.Watermark) {
			l := float64(now-*op.Watermark) / 1000
			op.LagS = &l
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestDefaults: thresholds follow the job's own bound, window and idle
// timeout.
func TestDefaults(t *testing.T) {
	th := Thresholds{}.Defaults(monitor.JobInfo{BoundMS: 30_000, WindowMS: 300_000, IdleMS: 60_000})
	if th.LagHighS != 330 || th.HoldS != 60 || th.FutureS != 300 || th.LateRise != 3 {
		t.Fatalf("%+v", th)
	}
	// A hold longer than a short window is a finding, within the idle
	// timeout and not below twice the bound.
	if th := (Thresholds{}).Defaults(monitor.JobInfo{BoundMS: 2_000, WindowMS: 1_000, IdleMS: 60_000}); th.HoldS != 5 || th.NoWatermarkS != 5 {
		t.Fatalf("a 1s window: %+v", th)
	}
	if th := (Thresholds{}).Defaults(monitor.JobInfo{BoundMS: 5_000, WindowMS: 60_000}); th.HoldS != 10 {
		t.Fatalf("no idle timeout: %+v", th)
	}
	if th := (Thresholds{LagHighS: 5}).Defaults(monitor.JobInfo{}); th.LagHighS != 5 {
		t.Fatalf("override lost: %+v", th)
	}
}

// TestDegenerateDumps: dumps a user may hand weir doctor --from (empty,
// no history, operators without subtasks or windows, a source only) give
// a report, never a panic.
func TestDegenerateDumps(t *testing.T) {
	w := int64(5)
	for i, d := range []Dump{
		{},
		{Snapshot: monitor.Snapshot{Operators: []monitor.Operator{{Name: "source", Source: true}}}},
		{Snapshot: monitor.Snapshot{Operators: []monitor.Operator{{Name: "w", Watermark: &w}}, Holders: []monitor.Holder{{Operator: "w"}}},
			History: []monitor.Point{{T: 1}, {T: 2, Ops: map[string]monitor.OpPoint{"w": {}}}}},
		{Snapshot: monitor.Snapshot{Operators: []monitor.Operator{{Name: "w", Window: &monitor.WindowOut{}, Subtasks: []monitor.Subtask{{Inputs: []monitor.Input{{Name: "x"}}}}}},
			Holders: []monitor.Holder{{Operator: "w", Chain: []string{"a", "b"}, HoldingForS: 1e9}}, Totals: monitor.Totals{RecordsIn: 5}}},
	} {
		r := Diagnose(d, Thresholds{})
		if r.Quadrant == "" {
			t.Errorf("dump %d: no quadrant", i)
		}
		_ = r.Text()
	}
}
