package fileio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
)

// TestFileSinkConformance runs the sink suite on a FileSink of JSON lines.
func TestFileSinkConformance(t *testing.T) {
	connectortest.RunSink(t, connectortest.Sink[[]byte]{
		Kind: connectortest.Append,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[[]byte], func(testing.TB) []connectortest.Rec) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			open := func(t testing.TB) connector.Sink[[]byte] {
				s, err := OpenFileSink(path, FileSinkOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			return open, readLines(path)
		},
		Make: func(r connectortest.Rec) []byte {
			b, _ := json.Marshal(r)
			return b
		},
		Break: func(_ testing.TB, s connector.Sink[[]byte]) { s.(*FileSink).f.Close() },
	})
}

// readLines reads the Recs of the JSON lines in path.
func readLines(path string) func(t testing.TB) []connectortest.Rec {
	return func(t testing.TB) []connectortest.Rec {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []connectortest.Rec
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l == "" {
				continue
			}
			var r connectortest.Rec
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			out = append(out, r)
		}
		return out
	}
}

// TestJSONLConformance runs the sink suite on the jsonl kind as a job
// spec's runner opens it (OpenMessages), a sink of late records.
func TestJSONLConformance(t *testing.T) {
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.Append, Role: connector.RoleLate, Open: openJSONL, Fresh: true,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			path := filepath.Join(t.TempDir(), "late.jsonl")
			return connectortest.MapSettings{"path": path}, readLines(path)
		},
		Break: func(_ testing.TB, s connector.Sink[connector.Message]) { s.(*fileMessages).f.Close() }})
}

// TestFileSinkOpen: a fresh open truncates; otherwise the sink appends
// after the last whole line (a torn one is cut); Recover refuses a file
// shorter than its checkpoint.
func TestFileSinkOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte("a\nb\ntor"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), [][]byte{[]byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "a\nb\nc\n" {
		t.Fatalf("appending: %q", b)
	}
	s, err = OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(t.Context(), 3, []byte("100")); err == nil || !strings.Contains(err.Error(), "shorter than the checkpoint") {
		t.Fatalf("Recover past the end: %v", err)
	}
	s.Close()
	s, err = OpenFileSink(path, FileSinkOptions{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("fresh: %q", b)
	}
}

// TestFileSinkDevices: a device (/dev/full) and a FIFO open as sinks, as
// the line sinks of a job take them; /dev/full's Flush fails.
func TestFileSinkDevices(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err == nil {
		s, err := OpenFileSink("/dev/full", FileSinkOptions{Fresh: true})
		if err != nil {
			t.Fatalf("open /dev/full: %v", err)
		}
		s.Write(t.Context(), [][]byte{[]byte("x")})
		if err := s.Flush(t.Context()); err == nil {
			t.Fatal("a Flush to /dev/full succeeded")
		}
		s.Close()
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	s, err := OpenFileSink(fifo, FileSinkOptions{})
	if err != nil {
		t.Fatalf("open a FIFO: %v", err)
	}
	s.Close()
}
