package window

import "github.com/weirstream/weir/etime"

// FireContext is what a window function sees when its window fires (E3):
// the key, the actual (possibly merged) window, the firing kind, the pane
// index this firing will carry, and the current watermark and processing
// time. Emit sends a result of the firing downstream. A window operator
// subtask owns one FireContext and reuses it for every firing, on its own
// goroutine: a window function must not keep it past its call.
type FireContext[K comparable, OUT any] struct {
	Key            K
	Window         Window
	Firing         Firing
	Pane           int64
	Watermark      etime.Time
	ProcessingTime etime.Time

	emit    func(Result[K, OUT])
	emitted int
}

// NewFireContext returns the context of a window operator whose results
// go to emit.
func NewFireContext[K comparable, OUT any](emit func(Result[K, OUT])) FireContext[K, OUT] {
	return FireContext[K, OUT]{emit: emit}
}

// Emit sends one result of this firing downstream.
func (c *FireContext[K, OUT]) Emit(v OUT) {
	c.emitted++
	c.emit(Result[K, OUT]{Key: c.Key, Window: c.Window, Firing: c.Firing, Pane: c.Pane, Watermark: c.Watermark, Value: v})
}

// Begin readies the context for a firing of window w of key, and counts
// its results from zero (the window operator calls it).
func (c *FireContext[K, OUT]) Begin(key K, w Window, f Firing, pane int64, wm, now etime.Time) {
	c.Key, c.Window, c.Firing, c.Pane, c.Watermark, c.ProcessingTime, c.emitted = key, w, f, pane, wm, now, 0
}

// Emitted is how many results the firing begun last has emitted.
func (c *FireContext[K, OUT]) Emitted() int { return c.emitted }
