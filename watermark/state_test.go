package watermark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

type rec struct{ wms []etime.Time }

func (r *rec) EmitWatermark(wm etime.Time) { r.wms = append(r.wms, wm) }
func (r *rec) MarkIdle()                   {}
func (r *rec) MarkActive()                 {}

// TestStateRoundTrip: a generator restored from a snapshot emits what the
// original would, through the idleness and heartbeat wrappers too, and a
// restored SourceOutput drops watermarks the original already forwarded.
func TestStateRoundTrip(t *testing.T) {
	c := clock.NewFake(time.Unix(0, 0))
	mk := func() Generator[int] {
		return WithHeartbeat(WithIdleness(BoundedOutOfOrderness[int](10), time.Minute, c), time.Hour, c)
	}
	g := mk()
	var out rec
	g.OnEvent(0, 1000, &out)
	g.OnEvent(0, 900, &out)
	snap := AppendState(nil, g)
	g2 := mk()
	if err := RestoreState(g2, snap); err != nil {
		t.Fatal(err)
	}
	var a, b rec
	g.OnPeriodicEmit(&a)
	g2.OnPeriodicEmit(&b)
	if len(a.wms) != 1 || a.wms[0] != 989 || len(b.wms) != 1 || b.wms[0] != 989 {
		t.Fatalf("original %v, restored %v", a.wms, b.wms)
	}
	if err := RestoreState(g2, snap[:0]); err == nil {
		t.Fatal("empty state must fail")
	}

	var down rec
	so := NewSourceOutput(&down)
	so.EmitWatermark(50)
	so.MarkIdle()
	so2 := NewSourceOutput(&down)
	if err := so2.RestoreState(so.AppendState(nil)); err != nil {
		t.Fatal(err)
	}
	so2.EmitWatermark(40)
	if len(down.wms) != 1 || !so2.idle {
		t.Fatalf("restored output forwarded %v, idle %v", down.wms, so2.idle)
	}
	if err := so2.RestoreState([]byte{1}); err == nil {
		t.Fatal("bad state must fail")
	}
	if RestoreState(Punctuated(func(int, etime.Time) (etime.Time, bool) { return 0, false }), nil) != nil || len(AppendState(nil, 3)) != 0 {
		t.Fatal("stateless values have no state")
	}
}
