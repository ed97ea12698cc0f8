package job

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/spec"
)

// TestIdleTimeoutDefaults: kafka and nats sources, whose partitions may
// stay empty for good, are idle after 1m without records unless the spec
// says otherwise (0: never); other sources default to never (H6).
func TestIdleTimeoutDefaults(t *testing.T) {
	sources := map[string]string{
		"kafka": "{type: kafka, kafka: {brokers: ['127.0.0.1:9092'], topic: in}}",
		"nats":  "{type: nats, nats: {url: 'nats://127.0.0.1:4222', stream: s, subjects: [in]}}",
		"file":  "{type: file, path: in.jsonl}",
	}
	for _, c := range []struct {
		source, watermark string
		want              etime.Duration
	}{
		{"kafka", "{max_out_of_orderness: 1s}", 60_000},
		{"nats", "{max_out_of_orderness: 1s}", 60_000},
		{"file", "{max_out_of_orderness: 1s}", 0},
		{"kafka", "{max_out_of_orderness: 1s, idle_timeout: 0}", 0},
		{"nats", "{max_out_of_orderness: 1s, idle_timeout: 5s}", 5_000},
	} {
		yaml := "name: j\nsource: " + sources[c.source] + "\nwatermark: " + c.watermark +
			"\nkey: [k]\nwindow: {type: tumbling, size: 10s}\naggregate: [{name: n, fn: count}]\n"
		s, err := spec.Load([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		p, err := spec.Compile(s)
		if err != nil {
			t.Fatalf("%s %s: %v", c.source, c.watermark, err)
		}
		if p.IdleTimeout != c.want {
			t.Errorf("%s %s: idle timeout %v, want %v", c.source, c.watermark, p.IdleTimeout, c.want)
		}
		if p.BacklogEvery != 1000 {
			t.Errorf("%s: backlog_every %d, want the default 1000", c.source, p.BacklogEvery)
		}
	}
}

// TestLateFiringIntervalRefusals: the throttle is refused where it cannot
// work, naming the field and the fix.
func TestLateFiringIntervalRefusals(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"window: {type: tumbling, size: 10s}\nlate_firing_interval: 1m", "late_firing_interval: late firings come only from allowed lateness"},
		{"window: {type: session, gap: 10s}\nallowed_lateness: 1m\nlate_firing_interval: 1m", "does not support session windows"},
		{"window: {type: tumbling, size: 10s}\nallowed_lateness: 1m\nlate_firing_interval: -1s", "late_firing_interval: -1s is negative"},
		{"window: {type: tumbling, size: 10s}\nallowed_lateness: 1m\nlate_firing_interval: 1m\ntrigger: {type: purging, nested: {type: count, count: 2}}", "a purging trigger clears"},
	} {
		yaml := "name: j\nsource: {type: file, path: in.jsonl}\nwatermark: {max_out_of_orderness: 1s}\nkey: [k]\n" + c.extra + "\naggregate: [{name: n, fn: count}]\n"
		s, err := spec.Load([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := spec.Compile(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.extra, err, c.want)
		}
	}
}

// TestZeroIsOff: the spec's 0 ("off") reaches the library as negative, whose
// 0 would mean its default (a 1m idle timeout, a watermark every 1,000
// records).
func TestZeroIsOff(t *testing.T) {
	if zeroIsOff(0) != -1 || zeroIsOff(time.Duration(0)) != -1 || zeroIsOff(5*time.Second) != 5*time.Second || zeroIsOff(1000) != 1000 {
		t.Fatal("zeroIsOff must map 0 to -1 and keep other values")
	}
}

// TestBacklogDefaultAgrees: the spec's default of watermark.backlog_every
// is the engine's (spec does not import the engine to read it).
func TestBacklogDefaultAgrees(t *testing.T) {
	if spec.DefaultBacklogEvery != weir.DefaultBacklogWatermarkEvery {
		t.Fatalf("spec.DefaultBacklogEvery %d, weir.DefaultBacklogWatermarkEvery %d", spec.DefaultBacklogEvery, weir.DefaultBacklogWatermarkEvery)
	}
}
