package spec

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// TestParseZone: names and offsets of zones with one offset all year
// read as that offset; a zone with daylight saving, or none, is refused
// with the reason.
func TestParseZone(t *testing.T) {
	const h = etime.Duration(3_600_000)
	for in, want := range map[string]etime.Duration{
		"Asia/Shanghai": 8 * h, "+08:00": 8 * h, "UTC+8": 8 * h, "GMT+05:30": 5*h + h/2, "-0300": -3 * h,
		"UTC": 0, "Z": 0, "Etc/GMT-9": 9 * h, "Asia/Kolkata": 5*h + h/2,
	} {
		got, err := ParseZone(in)
		if err != nil || got != want {
			t.Errorf("ParseZone(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"Europe/Berlin": "daylight saving", "America/New_York": "daylight saving", "America/Sao_Paulo": "daylight saving", "+14:01": "no offset",
		"Mars/Olympus": "no time zone", "+15:00": "no offset", "": "no time zone",
	} {
		if _, err := ParseZone(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseZone(%q): %v, want an error saying %q", in, err, msg)
		}
	}
}

// TestZoneWindows: a job's time_zone cuts its days at the zone's
// midnight (an hour's windows are the hours of UTC, a whole number of
// hours away), whatever offset the window has of its own, and
// ShownBounds shows them as its wall time.
func TestZoneWindows(t *testing.T) {
	base := `
name: z
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
aggregate: [{name: n, fn: count}]
sinks: {results: {type: stdout}}
time_zone: Asia/Shanghai
`
	const ts = etime.Time(1767222000000) // 2025-12-31 23:00 UTC, 07:00 in Shanghai
	for _, c := range []struct {
		window      string
		start, show etime.Time
	}{
		{"{type: tumbling, size: 1d}", 1767196800000, 1767225600000},             // 2025-12-31 16:00 UTC, shown 2026-01-01 00:00
		{"{type: tumbling, size: 1h}", 1767222000000, 1767250800000},             // the hour, shown 07:00
		{"{type: tumbling, size: 1d, offset: 1h}", 1767200400000, 1767229200000}, // the zone's 01:00
		{"{type: sliding, size: 2d, slide: 1d}", 1767110400000, 1767139200000},   // the day before's midnight
		{"{type: cumulate, size: 1d, step: 6h}", 1767196800000, 1767225600000},   // from the zone's midnight
	} {
		p, err := Parse([]byte(base + "window: " + c.window + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.window, err)
		}
		ws, err := p.Assigner.AssignWindows(ts, nil)
		if err != nil || len(ws) == 0 {
			t.Fatalf("%s: %v %v", c.window, ws, err)
		}
		first := slices.MinFunc(ws, func(a, b window.Window) int { return cmp.Compare(a.Start, b.Start) })
		if first.Start != c.start {
			t.Errorf("%s: first window starts at %v, want %v", c.window, first.Start, c.start)
		}
		if s, _ := p.ShownBounds(first); s != c.show {
			t.Errorf("%s: shown at %v, want %v", c.window, s, c.show)
		}
	}
	if s, e := (&Plan{Zone: 8 * 3_600_000}).ShownBounds(window.Global); s != window.Global.Start || e != window.Global.End {
		t.Errorf("the global window's bounds moved: %v %v", s, e)
	}
}
