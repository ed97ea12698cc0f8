package fileio

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCutTornTail(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"a\nb\n", "a\nb\n"}, {"a\nb\npart", "a\nb\n"}, {"part", ""}, {"", ""}} {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := cutTornTail(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if b, _ := os.ReadFile(path); string(b) != c.want {
			t.Errorf("%q: %q, want %q", c.in, b, c.want)
		}
	}
}

// TestScanSkipsTornTail: a results log's Scan reads the complete lines
// of the results file and its corrections, not a line a crash tore
// (weir backfill --verify read one as a corrupt result).
func TestScanSkipsTornTail(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(results, []byte("{\"a\":1}\n{\"a\":2}\n{\"a\":"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(CorrectionsPath(results), []byte("{\"a\":3}\n{\"a\""), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &resultsLog{results: results, corrections: CorrectionsPath(results)}
	var got []string
	if err := l.Scan(context.Background(), func(line []byte) error {
		if !json.Valid(line) {
			return fmt.Errorf("a torn line: %q", line)
		}
		got = append(got, string(line))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}; !slices.Equal(got, want) {
		t.Errorf("Scan read %q, want %q", got, want)
	}
}
