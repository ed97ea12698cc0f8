package clock

import (
	"testing"
	"time"
)

// TestFakeChanged: a Changed channel is closed by the next Set or Advance
// and by nothing else; a new one waits for the move after it.
func TestFakeChanged(t *testing.T) {
	f := NewFake(time.UnixMilli(1000))
	ch := f.Changed()
	if f.Changed() != ch {
		t.Fatal("two Changed calls without a move returned different channels")
	}
	select {
	case <-ch:
		t.Fatal("Changed was closed before the clock moved")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case <-ch:
	default:
		t.Fatal("Advance did not close Changed")
	}
	if got := f.Now(); !got.Equal(time.UnixMilli(1001)) {
		t.Fatalf("Now = %v after Advance, want 1001ms", got)
	}
	next := f.Changed()
	select {
	case <-next:
		t.Fatal("the channel taken after a move was already closed")
	default:
	}
	f.Set(time.UnixMilli(5))
	select {
	case <-next:
	default:
		t.Fatal("Set did not close Changed")
	}
	var zero Fake // the zero value works too
	zc := zero.Changed()
	zero.Advance(time.Second)
	select {
	case <-zc:
	default:
		t.Fatal("Advance of a zero Fake did not close Changed")
	}
}

// TestStepping: each reading is one step after the last.
func TestStepping(t *testing.T) {
	start := time.UnixMilli(1000)
	c := NewStepping(start, time.Second)
	if a, b := c.Now(), c.Now(); !a.Equal(start.Add(time.Second)) || b.Sub(a) != time.Second {
		t.Fatalf("readings %v, %v", a, b)
	}
}
