package fileio

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStreamSink: a device and the standard streams by name are written
// as streams (never truncated, cut or fsynced: /dev/null cannot be), a
// regular file is not.
func TestStreamSink(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.jsonl")
	os.WriteFile(file, []byte("earlier\n"), 0o644)
	for path, want := range map[string]bool{"/dev/null": true, "/dev/stdout": true, "/proc/self/fd/2": true, file: false} {
		if got := Stream(path); got != want {
			t.Errorf("Stream(%s) = %v, want %v", path, got, want)
		}
	}
	s, err := OpenFileSink("/dev/null", FileSinkOptions{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, [][]byte{[]byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	st, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatalf("PreCommit of /dev/null: %v", err)
	}
	if err := s.Recover(ctx, 1, st); err != nil {
		t.Fatalf("Recover of /dev/null: %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush of /dev/null: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
