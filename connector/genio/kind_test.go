package genio_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/genio"
	"github.com/weirstream/weir/etime"
)

// TestOpenUnpacedNow: the generator kind refuses to read unpaced a
// generator that starts now when its last records would be further
// ahead of the clock than max_future; paced, or within it, it opens.
func TestOpenUnpacedNow(t *testing.T) {
	k, ok := func() (connector.Kind, bool) {
		for _, k := range genio.Kinds() {
			if k.Name == "generator" {
				return k, true
			}
		}
		return connector.Kind{}, false
	}()
	if !ok {
		t.Fatal("no generator kind")
	}
	settings := connectortest.MapSettings{"generator.records": 10000, "generator.rate": 1000.0, "generator.keys": 10, "generator.start": "now", "generator.seed": 1}
	open := func(unpaced bool, maxFuture time.Duration) error {
		src, err := k.Source.Open(context.Background(), connector.SourceOpen{Settings: settings, Channels: 1, Unpaced: unpaced,
			MaxFuture: etime.FromDuration(maxFuture), Clock: clock.NewFake(time.UnixMilli(1_767_225_600_000)), Final: func() bool { return true }, Stop: func() bool { return false }})
		if err == nil && src.Source == nil {
			t.Fatal("opened without a source")
		}
		return err
	}
	err := open(true, 500*time.Millisecond)
	if want := "start: now puts the last records up to 10s ahead of the clock, beyond source.timestamp.max_future (500ms)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("unpaced, max_future 500ms: %v, want ...%s...", err, want)
	}
	for _, c := range []struct {
		unpaced   bool
		maxFuture time.Duration
	}{{false, 500 * time.Millisecond}, {true, time.Minute}, {true, 0}} {
		if err := open(c.unpaced, c.maxFuture); err != nil {
			t.Errorf("unpaced %v, max_future %v: %v", c.unpaced, c.maxFuture, err)
		}
	}
}
