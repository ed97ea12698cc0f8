package spec

import (
	"testing"

	"github.com/weirstream/weir/etime"
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
		s, err := Load([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(s)
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
