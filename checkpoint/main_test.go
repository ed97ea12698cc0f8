package checkpoint

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if point := os.Getenv(killEnv); point != "" {
		os.Exit(killChild(point)) // see TestKillAtCrashPoints
	}
	goleak.VerifyTestMain(m)
}

// logRecorder is a slog.Handler keeping every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

func (l *logRecorder) logger() *slog.Logger { return slog.New(l) }

// skipped returns the reasons logged for skipping checkpoint id.
func (l *logRecorder) skipped(id int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var reasons []string
	for _, r := range l.recs {
		if r.Message != "checkpoint: skipping checkpoint" || r.Level != slog.LevelWarn {
			continue
		}
		var rid int64
		var reason string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "id":
				rid = a.Value.Int64()
			case "reason":
				reason = a.Value.String()
			}
			return true
		})
		if rid == id {
			reasons = append(reasons, reason)
		}
	}
	return reasons
}

// String renders every record, for failure messages.
func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s", a)
			return true
		})
		b.WriteByte('\n')
	}
	return b.String()
}

func mustOpen(t testing.TB, dir string, o Options) *Dir {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// partsOf returns the standard content of checkpoint id.
func partsOf(id int64) map[string][]byte {
	return map[string][]byte{
		"source/0": fmt.Appendf(nil, "offset %d", id*100),
		"window/1": []byte(strings.Repeat(fmt.Sprintf("state of %d;", id), 50)),
		"window/2": {},
	}
}

// commit writes and commits checkpoint id with parts and meta.
func commit(t testing.TB, s *Dir, id int64, parts map[string][]byte, meta []byte) {
	t.Helper()
	p, err := s.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if err := p.WritePart(name, parts[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := commitMeta(p, meta); err != nil {
		t.Fatal(err)
	}
}

// checkLatest asserts Latest is checkpoint id with the given parts and meta.
func checkLatest(t testing.TB, s *Dir, id int64, parts map[string][]byte, meta []byte) {
	t.Helper()
	cp, ok, err := s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("Latest: none, want checkpoint %d", id)
	}
	if cp.ID != id {
		t.Fatalf("Latest: checkpoint %d, want %d", cp.ID, id)
	}
	if string(cp.Meta) != string(meta) {
		t.Errorf("checkpoint %d: meta %q, want %q", id, cp.Meta, meta)
	}
	if want := slices.Sorted(maps.Keys(parts)); !slices.Equal(cp.Parts, want) {
		t.Errorf("checkpoint %d: parts %q, want %q", id, cp.Parts, want)
	}
	for name, want := range parts {
		got, err := s.ReadPart(cp, name)
		if err != nil {
			t.Errorf("ReadPart(%q): %v", name, err)
		} else if string(got) != string(want) {
			t.Errorf("ReadPart(%q) = %d bytes, want %d bytes", name, len(got), len(want))
		}
	}
}

func checkList(t testing.TB, s *Dir, want ...int64) {
	t.Helper()
	got, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

// fataler is what testing.TB and *rapid.T have in common here.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// chkDirs returns the ids of the checkpoint directories in dir.
func chkDirs(t fataler, dir string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range ents {
		if id, ok := parseDirName(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// partPath returns the file holding part name of checkpoint id.
func partPath(t interface {
	fataler
	Fatalf(string, ...any)
}, dir string, id int64, name string) string {
	t.Helper()
	path := filepath.Join(dir, dirName(id))
	m, err := readManifest(path, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.entries {
		if e.name == name {
			return filepath.Join(path, e.file)
		}
	}
	t.Fatalf("checkpoint %d has no part %q", id, name)
	return ""
}

func manifestPath(dir string, id int64) string {
	return filepath.Join(dir, dirName(id), manifestName)
}

// crashPanic is what the test Crash hooks panic with.
type crashPanic string

// panicAt returns a Crash hook panicking at point.
func panicAt(point string) func(string) {
	return func(p string) {
		if p == point {
			panic(crashPanic(p))
		}
	}
}

// catchCrash runs f and returns the crash point it panicked at, if any.
func catchCrash(f func() error) (point string, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crashPanic)
			if !ok {
				panic(r)
			}
			point = string(c)
		}
	}()
	return "", f()
}

// commitMeta commits p, which Dir.Begin returned, storing meta in its
// manifest instead of the Dir's Options.Meta.
func commitMeta(p Pending, meta []byte) error { return p.(*pending).commit(meta) }
