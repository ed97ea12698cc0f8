package spec

import (
	"errors"
	"testing"
)

func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		fullYAML,
		fullJSON,
		"name: x\nkey: user_id\nwindow: {type: tumbling, size: 1m}\n",
		"allowed_lateness: 99999999999999999999\nwindow: {offset: -1.5s, gap: 106751991168d}\n",
		"trigger: &t {type: purging, nested: *t}\n",
		"sinks:\n  late: &s {type: jsonl}\n  dead_letter: *s\n  results:\n    <<: *s\n",
		"nmae: x\nwindow:\n  size: 250us\n  type: [a]\naggregate:\n  - {fn: {}}\n  - 5\nnmae: y\n",
		"name: x\n  foo: : bar\n",
		"[1, 2]",
		"",
		"---\n...\n---\nname: x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Load(data)
		if err == nil {
			if s == nil {
				t.Fatal("Load returned neither a spec nor an error")
			}
		}
		// Parse compiles whatever Load could read: it must not panic, and
		// its errors are Errors too.
		p, perr := Parse(data)
		if (p == nil) == (perr == nil) {
			t.Fatalf("Parse returned plan %v and error %v", p != nil, perr)
		}
		if err == nil {
			if perr != nil && !errors.As(perr, new(Errors)) {
				t.Fatalf("Parse error %T %q is not Errors", perr, perr)
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("error %T %q is not a non-empty Errors", err, err)
		}
		for i, e := range es {
			if e.Error() == "" {
				t.Errorf("error %d is empty", i)
			}
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, seed := range []string{
		"0s", "250ms", "1.5s", "-1h30m", "2d", "9223372036854775807ms", "-9223372036854775808ms",
		"106751991168d", "1.0005s", "250us", "1h30", "", "-", ".5m", "1..5s", "99999999999999999999999999999d",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %d, String %q parses to %d, %v", s, d, d.String(), back, err)
		}
	})
}
