package monitor

import (
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hist"
)

// TestPointFiringDelayPerInterval: a history point's firing-delay
// quantiles are over the firings since the previous point, so the
// minutes-late firings of a job's start do not weigh on later points;
// an interval without firings has 0.
func TestPointFiringDelayPerInterval(t *testing.T) {
	snap := func(now int64, delays ...float64) *Snapshot {
		var h hist.H
		for _, d := range delays {
			h.Observe(d)
		}
		return &Snapshot{Now: now, Operators: []Operator{{Name: "window", Window: &WindowOut{firingDelay: weir.Histogram(h)}}}}
	}
	start := []float64{300, 300, 300, 300}
	s0 := snap(0, start...)
	s1 := snap(10_000, append(start, 0.3, 0.3, 0.4)...)
	s2 := snap(20_000, append(start, 0.3, 0.3, 0.4)...)
	if p := point(s0, nil, 0); p.Ops["window"].FiringDelayP99S < 120 {
		t.Fatalf("the first point: p99 %v, want the start's minutes", p.Ops["window"].FiringDelayP99S)
	}
	if p := point(s1, s0, 10*time.Second); p.Ops["window"].FiringDelayP99S > 0.5 {
		t.Fatalf("the second point: p99 %v, want its own interval's 0.5s at most", p.Ops["window"].FiringDelayP99S)
	}
	if p := point(s2, s1, 10*time.Second); p.Ops["window"].FiringDelayP99S != 0 {
		t.Fatalf("an interval without firings: p99 %v, want 0", p.Ops["window"].FiringDelayP99S)
	}
}

// TestPointAcrossRestore: no rate spans a resume, whose counters jump to
// its checkpoint's as its operators are built and restore them (the
// doctor read the jump as a spike of late records after every resume,
// D17): not from a snapshot of the job before it was built, nor across
// another resume; then rates are the run's again.
func TestPointAcrossRestore(t *testing.T) {
	restored := int64(100_000)
	snap := func(now, side int64, why string, at *int64) *Snapshot {
		return &Snapshot{Now: now, RestoredAt: at, Operators: []Operator{{Name: "window",
			Subtasks: []Subtask{{Why: why}}, Window: &WindowOut{SideOutput: side}}}}
	}
	rate := func(s, prev *Snapshot) *float64 { return point(s, prev, time.Second).Ops["window"].SideOutputPerS }
	s0 := snap(restored, 0, notStarted, &restored)
	s1 := snap(restored+10_000, 4439, "", &restored) // built after a slow restore
	s2 := snap(restored+11_000, 4441, "", &restored)
	if r := rate(s1, s0); r != nil {
		t.Fatalf("a rate from before the job was built: %v/s", *r)
	}
	if r := rate(s2, s1); r == nil || *r != 2 {
		t.Fatalf("once built: %v, want 2/s", r)
	}
	other := restored + 50_000
	if r := rate(snap(restored+60_000, 9000, "", &other), s2); r != nil {
		t.Fatalf("a rate across another resume: %v/s", *r)
	}
}

// TestChannelInputs: a source whose reader reports no inputs (a file, a
// NATS stream) gets its channel as its input, whose last record's age
// grows once the source's count stops growing, so that the doctor sees
// it go quiet (D20); a reader's own inputs (Kafka's partitions) stay.
func TestChannelInputs(t *testing.T) {
	m := New(Options{})
	t0 := time.UnixMilli(1_000_000)
	snap := func(emitted int64, own []Input) *Snapshot {
		return &Snapshot{Operators: []Operator{{Name: "source", Source: true, emitted: emitted,
			Subtasks: []Subtask{{Index: 0, State: "active", Inputs: own}}}, {Name: "window"}}}
	}
	age := func(s *Snapshot) *float64 { return s.Operators[0].Subtasks[0].Inputs[0].LastRecordAgeS }
	s := snap(0, nil)
	m.channelInputs(s, t0)
	if in := s.Operators[0].Subtasks[0].Inputs; len(in) != 1 || in[0].Name != "channel 0" || in[0].LastRecordAgeS != nil {
		t.Fatalf("no record yet: %+v", in)
	}
	for i, c := range []struct {
		emitted int64
		at      time.Duration
		age     float64
	}{{10, time.Second, 0}, {20, 2 * time.Second, 0}, {20, 30 * time.Second, 28}} {
		s := snap(c.emitted, nil)
		m.channelInputs(s, t0.Add(c.at))
		if a := age(s); a == nil || *a != c.age {
			t.Fatalf("sample %d: age %v, want %v", i, a, c.age)
		}
	}
	own := []Input{{Name: "partition 0"}}
	s = snap(30, own)
	m.channelInputs(s, t0.Add(time.Minute))
	if in := s.Operators[0].Subtasks[0].Inputs; len(in) != 1 || in[0].Name != "partition 0" {
		t.Fatalf("a reader's own inputs: %+v", in)
	}
}
