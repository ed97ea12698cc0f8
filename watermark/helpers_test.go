package watermark

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

// recorder implements Output and ValveOutput and logs every call in order.
type recorder struct{ log []string }

func (r *recorder) EmitWatermark(wm etime.Time) { r.log = append(r.log, "wm "+wm.String()) }
func (r *recorder) MarkIdle()                   { r.log = append(r.log, "idle") }
func (r *recorder) MarkActive()                 { r.log = append(r.log, "active") }
func (r *recorder) Watermark(wm etime.Time)     { r.log = append(r.log, "wm "+wm.String()) }
func (r *recorder) Status(idle bool) {
	if idle {
		r.log = append(r.log, "status idle")
	} else {
		r.log = append(r.log, "status active")
	}
}

// take returns what was logged since the last call, comma separated.
func (r *recorder) take() string {
	s := strings.Join(r.log, ", ")
	r.log = nil
	return s
}

// step is one line of a scenario: an operation and the output it must
// produce ("" for none).
type step struct {
	op   string
	want string
}

func parseTime(t *testing.T, s string) etime.Time {
	t.Helper()
	switch s {
	case "-inf":
		return etime.MinTime
	case "+inf":
		return etime.MaxTime
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return etime.Time(n)
}

func parseInt(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad integer %q: %v", s, err)
	}
	return n
}

// runGenerator drives g through steps:
//
//	event <ts> [<value>]   OnEvent (value defaults to "")
//	periodic               OnPeriodicEmit
//	advance <duration>     moves clk forward
//
// Every generator output goes to out; the recorder rec (which out forwards
// to, directly or through a SourceOutput) is checked after each step.
func runGenerator(t *testing.T, g Generator[string], clk *clock.Fake, out Output, rec *recorder, steps []step) {
	t.Helper()
	for i, s := range steps {
		f := strings.Fields(s.op)
		switch f[0] {
		case "event":
			v := ""
			if len(f) > 2 {
				v = f[2]
			}
			g.OnEvent(v, parseTime(t, f[1]), out)
		case "periodic":
			g.OnPeriodicEmit(out)
		case "advance":
			d, err := time.ParseDuration(f[1])
			if err != nil {
				t.Fatalf("step %d: bad duration %q", i, f[1])
			}
			clk.Advance(d)
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if got := rec.take(); got != s.want {
			t.Errorf("step %d %q: got output %q, want %q", i, s.op, got, s.want)
		}
	}
}

// valveLike is what runValve drives: a Valve or a Combined.
type valveLike interface {
	InputWatermark(i int, wm etime.Time, out ValveOutput)
	InputStatus(i int, idle bool, out ValveOutput)
	Watermark() etime.Time
	Idle() bool
}

// runValve drives v through steps:
//
//	wm <ch> <time>
//	idle <ch>
//	active <ch>
func runValve(t *testing.T, v valveLike, steps []step) {
	t.Helper()
	rec := &recorder{}
	for i, s := range steps {
		f := strings.Fields(s.op)
		switch f[0] {
		case "wm":
			v.InputWatermark(parseInt(t, f[1]), parseTime(t, f[2]), rec)
		case "idle":
			v.InputStatus(parseInt(t, f[1]), true, rec)
		case "active":
			v.InputStatus(parseInt(t, f[1]), false, rec)
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if got := rec.take(); got != s.want {
			t.Errorf("step %d %q: got output %q, want %q", i, s.op, got, s.want)
		}
	}
}

// mustPanic runs f and fails unless it panics with a message containing
// want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one mentioning %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one mentioning %q", msg, want)
		}
	}()
	f()
}
