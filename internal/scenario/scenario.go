// Package scenario runs the datadriven scenario files under testdata/: a
// job line, then timelines of records, watermarks, idleness and processing
// time, and after each command the exact panes, side output and watermarks
// the job emitted. Every scenario runs on the deterministic executor; one
// whose outcome cannot depend on how channels interleave also runs on the
// parallel runtime (parallelism 1, 2 and 4, random batch sizes), which must
// emit the same multiset of lines, in the same order per key and window.
package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Rec is a scenario record: key@ts value.
type Rec struct {
	Key string
	TS  etime.Time
	Val int64
}

type itemKind uint8

const (
	iRec itemKind = iota
	iWatermark
	iIdle
	iActive
	iEnd
)

type item struct {
	kind  itemKind
	input int
	ch    int
	rec   Rec
	wm    etime.Time
}

// script is the shared, growing list of source items.
type script struct {
	items  []item
	cursor int // deterministic mode: next item to emit
}

type scriptSource struct {
	sc       *script
	input    int
	parallel bool
}

func (s scriptSource) Open(_ context.Context, ch, n int) (weir.SourceReader[Rec], error) {
	return &scriptReader{sc: s.sc, input: s.input, ch: ch, parallel: s.parallel}, nil
}

type scriptReader struct {
	sc        *script
	input, ch int
	parallel  bool
	pos       int
}

func (r *scriptReader) Read(_ context.Context, out weir.SourceOutput[Rec]) (weir.ReadStatus, error) {
	if r.parallel {
		// Own cursor: emit this channel's items, in order, in small bursts.
		for n := 0; n < 3; {
			if r.pos >= len(r.sc.items) {
				return weir.Done, nil
			}
			it := r.sc.items[r.pos]
			r.pos++
			if it.input != r.input || it.ch != r.ch {
				continue
			}
			if emit(it, out) {
				return weir.Done, nil
			}
			n++
		}
		return weir.Emitted, nil
	}
	// Shared cursor: emit the next item only if it is ours, so items are
	// processed strictly in script order across channels.
	if r.sc.cursor >= len(r.sc.items) {
		return weir.Waiting, nil
	}
	it := r.sc.items[r.sc.cursor]
	if it.input != r.input || it.ch != r.ch {
		return weir.Waiting, nil
	}
	r.sc.cursor++
	if emit(it, out) {
		return weir.Done, nil
	}
	return weir.Emitted, nil
}

func emit(it item, out weir.SourceOutput[Rec]) (end bool) {
	switch it.kind {
	case iRec:
		out.Emit(it.rec.TS, it.rec)
	case iWatermark:
		out.EmitWatermark(it.wm)
	case iIdle:
		out.MarkIdle()
	case iActive:
		out.MarkActive()
	case iEnd:
		return true
	}
	return false
}

func (r *scriptReader) Close() error { return nil }

// config is a parsed job line.
type config struct {
	line     string
	window   window.Assigner
	opts     weir.WindowOptions
	fn       string
	channels int
	inputs   int
	wmMode   string // explicit | bounded(d) | monotonous
	emit     string // every_record | periodic(ms)
	idle     etime.Duration
	heart    etime.Duration
	final    bool
	par      int
	parallel bool
	show     map[string]bool
	// cascade (nil: none) is a second window over the first's results
	// (semantics W12): each result is a record of its key, at the
	// window's maxTimestamp, whose value is the sum.
	cascade window.Assigner
}

// run is one job of a scenario file.
type run struct {
	cfg     config
	sc      *script
	clk     *clock.Fake
	env     *weir.Env
	exec    *weir.Stepper
	mu      sync.Mutex
	out     []string
	procCmd bool
	ended   bool

	newBackend func() state.Backend
}

// Run runs the scenario file at path.
func Run(t *testing.T, path string) { RunWithBackend(t, path, nil) }

// RunWithBackend runs the scenario file at path with window state in the
// backends newBackend makes (nil: the default in-memory one).
func RunWithBackend(t *testing.T, path string, newBackend func() state.Backend) {
	var cur *run
	finish := func() {
		if cur != nil {
			cur.checkParallel(t)
			cur = nil
		}
	}
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd == "job" {
			finish()
			cfg, err := parseConfig(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			r := &run{cfg: cfg, sc: &script{}, clk: clock.NewFake(time.UnixMilli(0)), newBackend: newBackend}
			if err := r.build(false, r.sc, r.cfg.par, 0, r.cfg.final); err != nil {
				return "error: " + err.Error() + "\n"
			}
			cur = r
			return "ok\n"
		}
		if cur == nil {
			d.Fatalf(t, "command %s before job", d.Cmd)
		}
		return cur.command(t, d)
	})
	finish()
}

func parseConfig(d *datadriven.TestData) (config, error) {
	c := config{line: d.FullCmd(), fn: "sum", channels: 1, inputs: 1, wmMode: "explicit", emit: "every_record", final: true, par: 1, parallel: true, show: map[string]bool{}}
	for _, a := range d.CmdArgs {
		v := strings.Join(a.Vals, ",")
		var err error
		switch a.Key {
		case "window":
			if strings.HasPrefix(v, "dynamic-session(") {
				// session(gap) where a record's value, when > 0, is its gap
				v = strings.TrimPrefix(v, "dynamic-")
				c.opts.SessionGap = func(r any) etime.Duration { return etime.Duration(r.(Rec).Val) }
			}
			c.window, err = parseAssigner(v)
		case "lateness":
			c.opts.AllowedLateness, err = parseDur(v)
		case "trigger":
			c.opts.Trigger, err = parseTrigger(v)
		case "fn":
			c.fn = v
		case "late":
			c.opts.LateOutput = v == "side"
		case "partial":
			c.opts.PartialOutput = v == "side"
		case "late-firing":
			c.opts.LateFiringInterval, err = parseDur(v)
		case "skip-unchanged":
			c.opts.SkipUnchanged = v != "off"
		case "evictor":
			name, args, err2 := call(v)
			if err2 != nil {
				return c, err2
			}
			ds, err2 := durs(args, 1)
			if err2 != nil {
				return c, err2
			}
			after := len(args) > 1 && args[1] == "after"
			switch name {
			case "count":
				c.opts.Evictor = weir.CountEvictor(int(ds[0]), after)
			case "time":
				c.opts.Evictor = weir.TimeEvictor(ds[0], after)
			default:
				return c, fmt.Errorf("unknown evictor %q", v)
			}
			c.fn = "list"
		case "channels":
			c.channels, err = strconv.Atoi(v)
		case "inputs":
			c.inputs, err = strconv.Atoi(v)
		case "watermarks":
			c.wmMode = v
		case "emit":
			c.emit = v
		case "idle":
			c.idle, err = parseDur(v)
		case "heartbeat":
			c.heart, err = parseDur(v)
		case "final":
			c.final = v != "off"
		case "par":
			c.par, err = strconv.Atoi(v)
		case "parallel":
			c.parallel = v != "off"
		case "show":
			for _, s := range a.Vals {
				c.show[s] = true
			}
		case "cascade":
			c.cascade, err = parseAssigner(v)
		default:
			return c, fmt.Errorf("unknown job argument %q", a.Key)
		}
		if err != nil {
			return c, fmt.Errorf("%s: %w", a.Key, err)
		}
	}
	if c.window == nil {
		return c, fmt.Errorf("job needs window=")
	}
	if c.cascade != nil && c.fn != "sum" {
		return c, fmt.Errorf("cascade= needs fn=sum")
	}
	if c.channels > 1 || c.inputs > 1 || c.window.ProcessingTime() || c.wmMode != "explicit" && !strings.HasPrefix(c.emit, "every") {
		c.parallel = false
	}
	return c, nil
}

func fmtRec(r Rec) string { return fmt.Sprintf("%s@%v %d", r.Key, r.TS, r.Val) }
func fmtWindows(ws []window.Window) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.String())
	}
	return b.String()
}

// build creates the env and its job; parallel builds for the parallel
// runtime with parallelism par and batch size batch.
func (r *run) build(parallel bool, sc *script, par, batch int, final bool) error {
	opts := weir.DefaultOptions()
	opts.Deterministic = !parallel
	opts.Parallelism = par
	opts.Clock = r.clk
	if r.newBackend != nil {
		opts.NewBackend = r.newBackend
	}
	if batch > 0 {
		opts.BatchSize = batch
	}
	env, err := weir.NewEnv(opts)
	if err != nil {
		return err
	}
	env.OnDeadLetter(func(d weir.DeadLetter) {
		r.emit(fmt.Sprintf("dead %s %s", d.Reason, fmtRec(d.Record.(Rec))))
	})
	c := r.cfg
	var s weir.Stream[Rec]
	for in := range c.inputs {
		si := weir.FromSource[Rec](env, "script", scriptSource{sc: sc, input: in, parallel: parallel}, weir.SourceOptions{Channels: c.channels, NoFinalWatermark: !final})
		if c.wmMode != "explicit" {
			si, err = r.assign(si)
			if err != nil {
				return err
			}
		}
		if in == 0 {
			s = si
		} else {
			s = weir.Connect(s, si, func(v Rec) Rec { return v }, func(v Rec) Rec { return v })
		}
	}
	keyed := weir.KeyBy(s, func(v Rec) string { return v.Key })
	w := weir.Window(keyed, c.window, c.opts)
	var results weir.Stream[window.Result[string, string]]
	var late weir.Stream[window.LateRecord[string, Rec]]
	switch c.fn {
	case "sum":
		o := weir.AggregateProcess(w, weir.Sum(func(r Rec) int64 { return r.Val }), func(ctx *weir.WindowContext[string, string], v int64) {
			ctx.Emit("sum=" + strconv.FormatInt(v, 10))
		})
		results, late = o.Results, o.Late
	case "list":
		o := weir.Process(w, func(ctx *weir.WindowContext[string, string], es []Rec) {
			var b strings.Builder
			b.WriteString("list=[")
			for i, e := range es {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(strconv.FormatInt(e.Val, 10))
			}
			b.WriteByte(']')
			ctx.Emit(b.String())
		})
		results, late = o.Results, o.Late
	default:
		return fmt.Errorf("unknown fn %q", c.fn)
	}
	weir.Observe(results, weir.Observer[window.Result[string, string]]{
		Record: func(_ etime.Time, p window.Result[string, string]) {
			if p.Firing == window.Retract {
				r.emit(fmt.Sprintf("retract %s %s pane=%d wm=%v", p.Key, p.Window, p.Pane, p.Watermark))
				return
			}
			r.emit(fmt.Sprintf("result %s %s %s pane=%d wm=%v %s", p.Key, p.Window, p.Firing, p.Pane, p.Watermark, p.Value))
		},
		Watermark: func(wm etime.Time) {
			if c.show["watermarks"] {
				r.emit(fmt.Sprintf("watermark %v", wm))
			}
		},
		Status: func(idle bool) {
			if c.show["watermarks"] {
				if idle {
					r.emit("status idle")
				} else {
					r.emit("status active")
				}
			}
		},
	})
	printLate := func(prefix string) func(etime.Time, window.LateRecord[string, Rec]) {
		return func(_ etime.Time, l window.LateRecord[string, Rec]) {
			kind := "late"
			if l.Reason == window.ExpiredPartial {
				kind = "partial"
			}
			r.emit(fmt.Sprintf("%s%s %s missed=%s wm=%v lateness=%d", prefix, kind, fmtRec(l.Record), fmtWindows(l.Windows), l.Watermark, l.Lateness))
		}
	}
	weir.ForEach(late, printLate(""))
	if c.cascade != nil {
		// Each result of the first window is a record of the second,
		// at the result's timestamp (the window's maxTimestamp).
		fired := weir.Filter(results, func(p window.Result[string, string]) bool { return p.Firing != window.Retract })
		recs := weir.Map(fired, func(p window.Result[string, string]) Rec {
			v, _ := strconv.ParseInt(strings.TrimPrefix(p.Value, "sum="), 10, 64)
			return Rec{Key: p.Key, TS: p.Window.MaxTimestamp(), Val: v}
		})
		o := weir.AggregateProcess(weir.Window(weir.KeyBy(recs, func(v Rec) string { return v.Key }), c.cascade,
			weir.WindowOptions{Name: "cascade", LateOutput: true}),
			weir.Sum(func(r Rec) int64 { return r.Val }), func(ctx *weir.WindowContext[string, string], v int64) {
				ctx.Emit("sum=" + strconv.FormatInt(v, 10))
			})
		weir.ForEach(o.Results, func(_ etime.Time, p window.Result[string, string]) {
			r.emit(fmt.Sprintf("cascade result %s %s %s pane=%d wm=%v %s", p.Key, p.Window, p.Firing, p.Pane, p.Watermark, p.Value))
		})
		weir.ForEach(o.Late, printLate("cascade "))
	}
	r.env = env
	if parallel {
		return nil
	}
	x, err := env.Step()
	if err != nil {
		return err
	}
	r.exec = x
	return nil
}

func (r *run) assign(s weir.Stream[Rec]) (weir.Stream[Rec], error) {
	c := r.cfg
	ts := func(v Rec) etime.Time { return v.TS }
	var ws weir.WatermarkStrategy[Rec]
	name, args, err := call(c.wmMode)
	if err != nil {
		return s, err
	}
	switch name {
	case "bounded":
		d, err := durs(args, 1)
		if err != nil {
			return s, err
		}
		ws = weir.BoundedOutOfOrderness(d[0].Std(), ts)
	case "monotonous":
		ws = weir.Monotonous(ts)
	case "ingestion":
		ws = weir.IngestionTime[Rec]()
	case "punctuated":
		// A record with key "!wm" is a marker: its timestamp is the
		// watermark. Markers flow on as records (they are filtered out
		// after the assigner).
		ws = weir.Punctuated(ts, func(v Rec, ts etime.Time) (etime.Time, bool) { return ts, v.Key == "!wm" })
	default:
		return s, fmt.Errorf("unknown watermarks %q", c.wmMode)
	}
	en, eargs, err := call(c.emit)
	if err != nil {
		return s, err
	}
	switch en {
	case "every_record":
		ws = ws.WithEveryRecord()
	case "periodic":
		if len(eargs) > 0 {
			d, err := durs(eargs, 1)
			if err != nil {
				return s, err
			}
			ws.Interval = d[0].Std()
		}
	default:
		return s, fmt.Errorf("unknown emit %q", c.emit)
	}
	if c.idle > 0 {
		ws = ws.WithIdleness(c.idle.Std())
	}
	if c.heart > 0 {
		ws = ws.WithHeartbeat(c.heart.Std())
	}
	s = weir.AssignTimestamps(s, ws)
	if name == "punctuated" {
		s = weir.Filter(s, func(v Rec) bool { return v.Key != "!wm" })
	}
	return s, nil
}

func (r *run) emit(line string) {
	r.mu.Lock()
	r.out = append(r.out, line)
	r.mu.Unlock()
}

func (r *run) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.out {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	r.out = r.out[:0]
	return b.String()
}

func argInt(d *datadriven.TestData, key string, def int) int {
	if a, ok := d.Arg(key); ok && len(a.Vals) > 0 {
		if v, err := strconv.Atoi(a.Vals[0]); err == nil {
			return v
		}
	}
	return def
}

// command runs one non-job command and returns what the job emitted.
func (r *run) command(t *testing.T, d *datadriven.TestData) string {
	in, ch := argInt(d, "in", 0), argInt(d, "ch", 0)
	push := func(it item) { it.input, it.ch = in, ch; r.sc.items = append(r.sc.items, it) }
	switch d.Cmd {
	case "add":
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			rec, err := parseRec(line)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			push(item{kind: iRec, rec: rec})
		}
	case "watermark":
		if len(d.CmdArgs) == 0 {
			d.Fatalf(t, "watermark needs a value")
		}
		wm, err := parseTime(d.CmdArgs[len(d.CmdArgs)-1].Key)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		push(item{kind: iWatermark, wm: wm})
	case "idle":
		push(item{kind: iIdle})
	case "active":
		push(item{kind: iActive})
	case "end":
		r.ended = true
		if _, ok := d.Arg("ch"); ok {
			push(item{kind: iEnd})
			break
		}
		for i := range r.cfg.inputs {
			for c := range r.cfg.channels {
				r.sc.items = append(r.sc.items, item{kind: iEnd, input: i, ch: c})
			}
		}
	case "tick":
		r.procCmd = true
		ms := argInt(d, "ms", 0)
		if len(d.CmdArgs) > 0 && d.CmdArgs[0].Vals == nil {
			ms, _ = strconv.Atoi(d.CmdArgs[0].Key)
		}
		if _, err := r.exec.RunUntilQuiet(); err != nil {
			return "error: " + err.Error() + "\n"
		}
		r.clk.Advance(time.Duration(ms) * time.Millisecond)
		if err := r.exec.AdvanceProcessingTime(clock.Millis(r.clk)); err != nil {
			return "error: " + err.Error() + "\n"
		}
	case "counters":
		if _, err := r.exec.RunUntilQuiet(); err != nil {
			return "error: " + err.Error() + "\n"
		}
		c := r.env.Report()
		tot, casc := c.Total(), ""
		if r.cfg.cascade != nil {
			// The first window's counts, then the cascade's: its records
			// in are the first window's results.
			tot = c.Windows["window"]
			k := c.Windows["cascade"]
			casc = fmt.Sprintf("cascade in=%d accepted=%d late_side_output=%d late_dropped=%d fired_on_time=%d\n", k.RecordsIn, k.Accepted, k.LateSideOutput, k.LateDropped, k.FiredOnTime)
		}
		unchanged := ""
		if r.cfg.opts.SkipUnchanged {
			unchanged = fmt.Sprintf(" unchanged=%d", tot.Unchanged)
		}
		return fmt.Sprintf("in=%d accepted=%d late_side_output=%d late_dropped=%d dead_letter=%d window_misses=%d partial_side_output=%d retractions=%d fired_early=%d fired_on_time=%d fired_late=%d%s\n",
			tot.RecordsIn, tot.Accepted, tot.LateSideOutput, tot.LateDropped, c.DeadLetters, tot.WindowMisses, tot.PartialSideOutput, tot.Retractions, tot.FiredEarly, tot.FiredOnTime, tot.FiredLate, unchanged) + casc + r.take()
	case "state":
		if _, err := r.exec.RunUntilQuiet(); err != nil {
			return "error: " + err.Error() + "\n"
		}
		st := r.env.State()
		return fmt.Sprintf("open_windows=%d timers=%d\n", st.OpenWindows, st.Timers)
	case "watermarks":
		if _, err := r.exec.RunUntilQuiet(); err != nil {
			return "error: " + err.Error() + "\n"
		}
		var b strings.Builder
		for _, w := range r.env.Watermarks() {
			if len(w.Channels) == 0 {
				continue
			}
			fmt.Fprintf(&b, "%s/%d wm=%v idle=%v", w.Stage, w.Subtask, w.Watermark, w.Idle)
			for g, chs := range w.Channels {
				for i, c := range chs {
					fmt.Fprintf(&b, " g%d.ch%d=%v", g, i, c.Watermark)
					if c.Idle {
						b.WriteString("(idle)")
					}
					if !c.Aligned {
						b.WriteString("(unaligned)")
					}
				}
			}
			b.WriteByte('\n')
		}
		return b.String()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	if _, err := r.exec.RunUntilQuiet(); err != nil {
		return "error: " + err.Error() + "\n"
	}
	return r.take()
}

func parseRec(line string) (Rec, error) {
	f := strings.Fields(line)
	at := strings.IndexByte(f[0], '@')
	if at < 0 {
		return Rec{}, fmt.Errorf("record %q: want key@ts [value]", line)
	}
	ts, err := parseTime(f[0][at+1:])
	if err != nil {
		return Rec{}, fmt.Errorf("record %q: %v", line, err)
	}
	rec := Rec{Key: f[0][:at], TS: ts, Val: 1}
	if len(f) > 1 {
		if rec.Val, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return Rec{}, fmt.Errorf("record %q: %v", line, err)
		}
	}
	return rec, nil
}

func filterData(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "result ") || strings.HasPrefix(l, "retract ") || strings.HasPrefix(l, "late ") || strings.HasPrefix(l, "partial ") || strings.HasPrefix(l, "dead ") {
			out = append(out, l)
		}
	}
	return out
}

// groupKey is "key window" of a result or retract line; "" for others.
func groupKey(l string) string {
	f := strings.Fields(l)
	if (f[0] == "result" || f[0] == "retract") && len(f) > 2 {
		return f[1] + " " + f[2]
	}
	return ""
}

// checkParallel replays the whole script on the parallel runtime and
// compares with the deterministic run.
func (r *run) checkParallel(t *testing.T) {
	// Collect the deterministic run's complete output first.
	if _, err := r.exec.RunUntilQuiet(); err != nil {
		t.Fatalf("%s: %v", r.cfg.line, err)
	}
	if !r.cfg.parallel || r.procCmd {
		return
	}
	want := r.replay(t, false, 1, 0)
	wantC := r.env.Report().Total()
	for _, par := range []int{1, 2, 4} {
		batch := 1 + rand.IntN(7)
		got := r.replay(t, true, par, batch)
		gotC := r.env.Report().Total()
		t.Logf("%s: parallel par=%d batch=%d: %d lines", r.cfg.line, par, batch, len(got))
		if !equalMultiset(want, got) || !equalPerGroup(want, got) || wantC != gotC {
			t.Errorf("%s: parallel run (par=%d batch=%d) differs\nwant %d lines:\n%s\ngot %d lines:\n%s\ncounters want %+v\n got %+v",
				r.cfg.line, par, batch, len(want), strings.Join(want, "\n"), len(got), strings.Join(got, "\n"), wantC, gotC)
		}
	}
}

// replay runs the recorded script from the start in a fresh env.
func (r *run) replay(t *testing.T, parallel bool, par, batch int) []string {
	sc := &script{items: slices.Clone(r.sc.items)}
	r.out = nil
	r.clk = clock.NewFake(time.UnixMilli(0))
	if err := r.build(parallel, sc, par, batch, r.ended && r.cfg.final); err != nil {
		t.Fatalf("%s: %v", r.cfg.line, err)
	}
	if !r.ended {
		for i := range r.cfg.inputs {
			for c := range r.cfg.channels {
				sc.items = append(sc.items, item{kind: iEnd, input: i, ch: c})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if parallel {
		if _, err := r.env.Execute(ctx); err != nil {
			t.Fatalf("%s: parallel: %v", r.cfg.line, err)
		}
	} else {
		if _, err := r.exec.RunUntilQuiet(); err != nil {
			t.Fatalf("%s: %v", r.cfg.line, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return filterData(r.out)
}

func equalMultiset(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func equalPerGroup(a, b []string) bool {
	ga, gb := map[string][]string{}, map[string][]string{}
	for _, l := range a {
		ga[groupKey(l)] = append(ga[groupKey(l)], l)
	}
	for _, l := range b {
		gb[groupKey(l)] = append(gb[groupKey(l)], l)
	}
	for k, v := range ga {
		if k != "" && !slices.Equal(v, gb[k]) {
			return false
		}
	}
	return true
}
