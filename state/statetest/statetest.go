// Package statetest is the conformance suite of state.KV backends: every
// backend's tests call Run (and its benchmarks Bench), so that all backends
// behave the same, down to the bytes of their snapshots.
package statetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/state"
)

// Option configures Run.
type Option func(*config)

type config struct {
	exactStats bool
}

// ExactStats makes Run check that Stats are exact after every operation;
// without it Run checks only that they are not negative (backends test
// their estimates themselves).
func ExactStats() Option { return func(c *config) { c.exactStats = true } }

// Run runs the conformance suite. open returns a new, empty KV; the suite
// closes it (Close is idempotent, so open may also register a cleanup).
func Run(t *testing.T, open func(t *testing.T) state.KV, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &suite{open: open, cfg: c}
	t.Run("GetSetDelete", s.testGetSetDelete)
	t.Run("SetCopies", s.testSetCopies)
	t.Run("ValueValidity", s.testValueValidity)
	t.Run("ScanOrder", s.testScanOrder)
	t.Run("ScanBounds", s.testScanBounds)
	t.Run("DeleteRange", s.testDeleteRange)
	t.Run("Snapshot", s.testSnapshot)
	t.Run("Restore", s.testRestore)
	t.Run("RestoreReplaces", s.testRestoreReplaces)
	t.Run("RestoreStream", s.testRestoreStream)
	t.Run("Rescale", s.testRescale)
	t.Run("CorruptSnapshot", s.testCorruptSnapshot)
	t.Run("Stats", s.testStats)
	t.Run("Closed", s.testClosed)
	t.Run("Model", s.testModel)
}

type suite struct {
	open func(t *testing.T) state.KV
	cfg  config
}

func (s *suite) kv(t *testing.T) state.KV {
	t.Helper()
	kv := s.open(t)
	t.Cleanup(func() {
		if err := kv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return kv
}

// TB is the part of testing.TB (and of *rapid.T) the helpers use.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Key builds a KV key: the key group, then suffix.
func Key(kg state.KeyGroup, suffix ...byte) []byte {
	return append(state.AppendKeyGroup(nil, kg), suffix...)
}

// Model is a reference KV: a map of keys to values.
type Model map[string]string

// Sorted returns the model's keys in ascending byte order.
func (m Model) Sorted() []string { return slices.Sorted(maps.Keys(m)) }

// Range returns the model's keys in [start, end) (an empty end is
// unbounded), sorted.
func (m Model) Range(start, end []byte) []string {
	var out []string
	for _, k := range m.Sorted() {
		if k >= string(start) && (len(end) == 0 || k < string(end)) {
			out = append(out, k)
		}
	}
	return out
}

// Stats returns the exact stats of the model.
func (m Model) Stats() state.KVStats {
	var st state.KVStats
	for k, v := range m {
		st.Keys++
		st.Bytes += int64(len(k) + len(v))
	}
	return st
}

// Snapshot builds the reference snapshot of the model's key groups
// [first, last] with state.WriteSnapshot.
func (m Model) Snapshot(t TB, first, last state.KeyGroup) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := state.WriteSnapshot(&buf, func(fn func(k, v []byte) bool) error {
		for _, k := range m.Sorted() {
			if kg := state.KeyGroupOfKey([]byte(k)); kg < first || kg > last {
				continue
			}
			if !fn([]byte(k), []byte(m[k])) {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("WriteSnapshot: %v", err)
	}
	return buf.Bytes()
}

// Contents returns everything in kv, read with Scan.
func Contents(t TB, kv state.KV) Model {
	t.Helper()
	m := Model{}
	var prev []byte
	first := true
	err := kv.Scan(nil, nil, func(k, v []byte) bool {
		if !first && bytes.Compare(prev, k) >= 0 {
			t.Errorf("Scan: key %x after %x", k, prev)
		}
		first = false
		prev = append(prev[:0], k...)
		m[string(k)] = string(v)
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return m
}

func (s *suite) fill(t *testing.T, kv state.KV, m Model) {
	t.Helper()
	for _, k := range m.Sorted() {
		if err := kv.Set([]byte(k), []byte(m[k])); err != nil {
			t.Fatalf("Set(%x): %v", k, err)
		}
	}
}

// check compares kv with m: contents, Get of every key and stats.
func (s *suite) check(t *testing.T, kv state.KV, m Model) {
	t.Helper()
	got := Contents(t, kv)
	if !maps.Equal(got, m) {
		t.Fatalf("contents differ:\n got  %s\n want %s", format(got), format(m))
	}
	for k, want := range m {
		v, ok, err := kv.Get([]byte(k))
		if err != nil || !ok || string(v) != want {
			t.Fatalf("Get(%x) = %x, %v, %v; want %x", k, v, ok, err, want)
		}
	}
	s.checkStats(t, kv, m)
}

func (s *suite) checkStats(t *testing.T, kv state.KV, m Model) {
	t.Helper()
	got, want := kv.Stats(), m.Stats()
	if s.cfg.exactStats {
		if got != want {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
		return
	}
	if got.Keys < 0 || got.Bytes < 0 {
		t.Fatalf("Stats = %+v, implausible for %+v", got, want)
	}
}

func format(m Model) string {
	var b bytes.Buffer
	b.WriteString("{")
	for i, k := range m.Sorted() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%x:%x", k, m[k])
	}
	b.WriteString("}")
	return b.String()
}

func mustGet(t *testing.T, kv state.KV, key []byte) ([]byte, bool) {
	t.Helper()
	v, ok, err := kv.Get(key)
	if err != nil {
		t.Fatalf("Get(%x): %v", key, err)
	}
	return v, ok
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *suite) testGetSetDelete(t *testing.T) {
	kv := s.kv(t)
	k := Key(1, 'a')
	if v, ok := mustGet(t, kv, k); ok || v != nil {
		t.Fatalf("Get of absent key = %q, %v", v, ok)
	}
	must(t, kv.Set(k, []byte("one")))
	if v, ok := mustGet(t, kv, k); !ok || string(v) != "one" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	// Overwrites: longer, shorter, empty.
	for _, val := range []string{"a much longer value than before", "s", ""} {
		must(t, kv.Set(k, []byte(val)))
		if v, ok := mustGet(t, kv, k); !ok || string(v) != val {
			t.Fatalf("after Set(%q): Get = %q, %v", val, v, ok)
		}
	}
	// An empty value exists; a nil value is an empty value.
	must(t, kv.Set(Key(1, 'b'), nil))
	if v, ok := mustGet(t, kv, Key(1, 'b')); !ok || len(v) != 0 {
		t.Fatalf("Get of empty value = %q, %v", v, ok)
	}
	// A key that is only a key group, and the neighbours of k.
	must(t, kv.Set(Key(1), []byte("kg")))
	if _, ok := mustGet(t, kv, Key(1, 'a', 0)); ok {
		t.Fatal("Get of a longer key found something")
	}
	if _, ok := mustGet(t, kv, Key(0, 'a')); ok {
		t.Fatal("Get in another key group found something")
	}
	s.check(t, kv, Model{string(k): "", string(Key(1, 'b')): "", string(Key(1)): "kg"})

	must(t, kv.Delete(k))
	if _, ok := mustGet(t, kv, k); ok {
		t.Fatal("Get after Delete found the key")
	}
	must(t, kv.Delete(k)) // absent: not an error
	must(t, kv.Delete(Key(9, 'z')))
	s.check(t, kv, Model{string(Key(1, 'b')): "", string(Key(1)): "kg"})
	// Set after Delete.
	must(t, kv.Set(k, []byte("again")))
	s.check(t, kv, Model{string(k): "again", string(Key(1, 'b')): "", string(Key(1)): "kg"})

	for _, short := range [][]byte{nil, {}, {1}} {
		if err := kv.Set(short, []byte("x")); !errors.Is(err, state.ErrShortKey) {
			t.Fatalf("Set(%x) = %v, want ErrShortKey", short, err)
		}
		// Get and Delete of such keys find nothing.
		if v, ok := mustGet(t, kv, short); ok {
			t.Fatalf("Get(%x) = %q", short, v)
		}
		must(t, kv.Delete(short))
	}
	s.check(t, kv, Model{string(k): "again", string(Key(1, 'b')): "", string(Key(1)): "kg"})
}

func (s *suite) testSetCopies(t *testing.T) {
	kv := s.kv(t)
	key := Key(2, 'k', 'e', 'y')
	val := []byte("value")
	must(t, kv.Set(key, val))
	key[2], val[0] = 'X', 'X'
	if _, ok := mustGet(t, kv, key); ok {
		t.Fatal("mutating the key after Set changed the stored key")
	}
	if v, ok := mustGet(t, kv, Key(2, 'k', 'e', 'y')); !ok || string(v) != "value" {
		t.Fatalf("mutating the value after Set changed the stored value: %q, %v", v, ok)
	}
	// The same for overwrites (which may reuse storage).
	val = []byte("VALUE")
	must(t, kv.Set(Key(2, 'k', 'e', 'y'), val))
	val[0] = 'x'
	if v, _ := mustGet(t, kv, Key(2, 'k', 'e', 'y')); string(v) != "VALUE" {
		t.Fatalf("after overwrite: %q", v)
	}
	// Keys passed to Get and Delete are not retained either.
	probe := Key(2, 'k', 'e', 'y')
	mustGet(t, kv, probe)
	probe[2] = 'Z'
	if v, ok := mustGet(t, kv, Key(2, 'k', 'e', 'y')); !ok || string(v) != "VALUE" {
		t.Fatalf("after mutating Get's key: %q, %v", v, ok)
	}
	s.check(t, kv, Model{string(Key(2, 'k', 'e', 'y')): "VALUE"})
}

func (s *suite) testValueValidity(t *testing.T) {
	kv := s.kv(t)
	a, b := Key(3, 'a'), Key(3, 'b')
	must(t, kv.Set(a, []byte("alpha")))
	must(t, kv.Set(b, []byte("beta-beta")))
	// Each Get's value is right when returned, whatever came before
	// (backends reuse a buffer).
	for range 3 {
		if v, _ := mustGet(t, kv, a); string(v) != "alpha" {
			t.Fatalf("Get(a) = %q", v)
		}
		if v, _ := mustGet(t, kv, b); string(v) != "beta-beta" {
			t.Fatalf("Get(b) = %q", v)
		}
	}
	// Read-modify-write with the returned slice as Set's argument: Set
	// copies before the slice becomes invalid, also when it aliases the
	// stored value.
	v, _ := mustGet(t, kv, b)
	must(t, kv.Set(b, v[5:]))
	if v, _ := mustGet(t, kv, b); string(v) != "beta" {
		t.Fatalf("after Set(b, v[5:]) Get(b) = %q", v)
	}
	v, _ = mustGet(t, kv, a)
	must(t, kv.Set(b, v))
	if v, _ := mustGet(t, kv, b); string(v) != "alpha" {
		t.Fatalf("after Set(b, Get(a)) Get(b) = %q", v)
	}
	v, _ = mustGet(t, kv, a)
	must(t, kv.Set(a, append(v[:len(v):len(v)], "-more"...)))
	// Scan's k and v are valid during the call: copies made there stay
	// right after the scan.
	var got []string
	must(t, kv.Scan(Key(3), Key(4), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	}))
	want := []string{string(a) + "=alpha-more", string(b) + "=alpha"}
	if !slices.Equal(got, want) {
		t.Fatalf("Scan = %q, want %q", got, want)
	}
	s.check(t, kv, Model{string(a): "alpha-more", string(b): "alpha"})
}

// orderKeys are keys whose byte order is easy to get wrong: prefixes of each
// other, zero and 0xff bytes, key-group boundaries.
func orderKeys() [][]byte {
	return [][]byte{
		Key(0),
		Key(0, 0),
		Key(0, 0, 0),
		Key(0, 0, 1),
		Key(0, 1),
		Key(0, 1, 0),
		// Long keys equal in their first 8 bytes (zero padding included).
		Key(0, 1, 2, 3, 4, 5),
		Key(0, 1, 2, 3, 4, 5, 0),
		Key(0, 1, 2, 3, 4, 5, 0, 0),
		Key(0, 1, 2, 3, 4, 5, 0, 1),
		Key(0, 1, 2, 3, 4, 5, 1),
		Key(0, 1, 2, 3, 4, 5, 1, 0xff, 0xff, 0xff),
		Key(0, 1, 0xff),
		Key(0, 0x7f),
		Key(0, 0x80),
		Key(0, 0xff),
		Key(0, 0xff, 0),
		Key(0, 0xff, 0xff),
		Key(0, 0xff, 0xff, 0xff),
		Key(1),
		Key(1, 'a'),
		Key(1, 'a', 'b'),
		Key(1, 'b'),
		Key(0xff),
		Key(0x100),
		Key(0xfffe, 0xff),
		Key(0xffff),
		Key(0xffff, 0),
		Key(0xffff, 0xff, 0xff),
	}
}

func (s *suite) testScanOrder(t *testing.T) {
	kv := s.kv(t)
	keys := orderKeys()
	m := Model{}
	// Insert in a scrambled order; some values empty.
	for i := range keys {
		k := keys[(i*7)%len(keys)]
		v := ""
		if i%3 != 0 {
			v = fmt.Sprintf("v%d", i)
		}
		m[string(k)] = v
		must(t, kv.Set(k, []byte(v)))
	}
	if len(m) != len(keys) || !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatal("test keys are not distinct and sorted")
	}
	var got [][]byte
	must(t, kv.Scan(nil, nil, func(k, v []byte) bool {
		got = append(got, bytes.Clone(k))
		if string(v) != m[string(k)] {
			t.Errorf("Scan value of %x = %q, want %q", k, v, m[string(k)])
		}
		return true
	}))
	if !slices.EqualFunc(got, keys, bytes.Equal) {
		t.Fatalf("Scan order:\n got  %x\n want %x", got, keys)
	}
	s.check(t, kv, m)
}

func (s *suite) testScanBounds(t *testing.T) {
	kv := s.kv(t)
	keys := orderKeys()
	m := Model{}
	for i, k := range keys {
		m[string(k)] = fmt.Sprint(i)
		must(t, kv.Set(k, []byte(m[string(k)])))
	}
	scan := func(start, end []byte, limit int) []string {
		var out []string
		must(t, kv.Scan(start, end, func(k, v []byte) bool {
			out = append(out, string(k))
			return len(out) < limit
		}))
		return out
	}
	var bounds [][]byte
	bounds = append(bounds, nil, Key(0, 0, 0, 0), Key(0, 0x01, 0), Key(1, 0), Key(0x1234), Key(0xffff, 0, 0))
	bounds = append(bounds, keys...)
	bounds = append(bounds, []byte{0xff, 0xff, 0xff, 0xff, 0xff})
	for _, start := range bounds {
		for _, end := range bounds {
			want := m.Range(start, end)
			if got := scan(start, end, 1<<30); !slices.Equal(got, want) {
				t.Fatalf("Scan[%x, %x) = %x, want %x", start, end, got, want)
			}
			// Early stop after 1 and 3 keys.
			for _, limit := range []int{1, 3} {
				w := want[:min(limit, len(want))]
				if got := scan(start, end, limit); !slices.Equal(got, w) {
					t.Fatalf("Scan[%x, %x) stopping after %d = %x, want %x", start, end, limit, got, w)
				}
			}
		}
	}
	// Scan of an empty KV.
	empty := s.kv(t)
	must(t, empty.Scan(nil, nil, func(k, v []byte) bool {
		t.Fatalf("Scan of an empty KV called fn with %x", k)
		return true
	}))
}

func (s *suite) testDeleteRange(t *testing.T) {
	kv := s.kv(t)
	m := Model{}
	set := func(k []byte, v string) {
		t.Helper()
		m[string(k)] = v
		must(t, kv.Set(k, []byte(v)))
	}
	del := func(start, end []byte) {
		t.Helper()
		for _, k := range m.Range(start, end) {
			delete(m, k)
		}
		must(t, kv.DeleteRange(start, end))
		s.check(t, kv, m)
	}
	for i, k := range orderKeys() {
		set(k, fmt.Sprint(i))
	}
	// Many keys in key groups 5 and 6 (enough for a backend to use range
	// tombstones rather than point deletes).
	for i := range 300 {
		set(Key(5, byte(i>>8), byte(i)), fmt.Sprintf("five-%d", i))
		set(Key(6, byte(i>>8), byte(i)), fmt.Sprintf("six-%d", i))
	}
	s.check(t, kv, m)
	del(Key(0, 1), Key(0, 0xff))             // middle of key group 0
	del(Key(0, 0xff), Key(0, 0xff))          // empty range
	del(Key(1, 'b'), Key(1, 'a'))            // start after end: nothing
	del(Key(0x100), Key(0x101))              // one key
	del(Key(7), Key(8))                      // no keys in range
	del(Key(5, 0, 10), Key(5, 0, 20))        // a few keys
	del(Key(5), Key(6))                      // many keys
	set(Key(5, 0, 15), "back")               // a write after the deletion is visible
	set(Key(5, 0, 200), "back too")          //
	del(Key(6, 0, 50), nil)                  // unbounded end
	set(Key(6, 0, 60), "after unbounded")    //
	set(Key(0xffff, 0xff), "last key group") //
	del(nil, Key(0, 0, 1))                   // unbounded start
	del(Key(6, 0, 60), Key(6, 0, 60, 0))     // exactly one key, by its successor
	for i := range 40 {
		set(Key(7, byte(i)), "seven")
	}
	del(nil, Key(7, 20)) // many keys, unbounded start
	del(nil, nil)        // everything
	if len(m) != 0 {
		t.Fatalf("model not empty: %v", m)
	}
	set(Key(5, 0, 15), "reborn")
	s.check(t, kv, m)
}

// kgModel returns content spread over key groups 0..127 (several keys in
// most, none in some) plus the extreme key group 0xffff.
func kgModel() Model {
	m := Model{}
	for kg := range state.KeyGroup(state.DefaultMaxParallelism) {
		if kg%11 == 3 {
			continue // empty key groups
		}
		n := int(kg%5) + 1
		for i := range n {
			m[string(Key(kg, byte(i), 'x'))] = fmt.Sprintf("kg%d-%d", kg, i)
		}
		m[string(Key(kg))] = ""
		m[string(Key(kg, 0xff, 0xff))] = string(bytes.Repeat([]byte{0xff}, int(kg)))
	}
	m[string(Key(0xffff, 1))] = "max key group"
	return m
}

func filterKG(m Model, first, last state.KeyGroup) Model {
	out := Model{}
	for k, v := range m {
		if kg := state.KeyGroupOfKey([]byte(k)); kg >= first && kg <= last {
			out[k] = v
		}
	}
	return out
}

func snapshot(t *testing.T, kv state.KV, first, last state.KeyGroup) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := kv.Snapshot(first, last, &buf); err != nil {
		t.Fatalf("Snapshot(%d, %d): %v", first, last, err)
	}
	return buf.Bytes()
}

func (s *suite) testSnapshot(t *testing.T) {
	kv := s.kv(t)
	m := kgModel()
	s.fill(t, kv, m)
	// Overwrites and deletions must not show in snapshots.
	must(t, kv.Set(Key(9, 0, 'x'), []byte("changed")))
	m[string(Key(9, 0, 'x'))] = "changed"
	must(t, kv.Delete(Key(10)))
	delete(m, string(Key(10)))
	must(t, kv.DeleteRange(Key(20), Key(22)))
	for k := range filterKG(m, 20, 21) {
		delete(m, k)
	}
	for _, r := range [][2]state.KeyGroup{
		{0, 127}, {0, 0xffff}, {0, 0}, {3, 3}, {14, 14}, {5, 17}, {64, 127}, {20, 21}, {127, 0xffff},
		{0xffff, 0xffff}, {200, 300}, {9, 8},
	} {
		got := snapshot(t, kv, r[0], r[1])
		want := m.Snapshot(t, r[0], r[1])
		if !bytes.Equal(got, want) {
			t.Fatalf("Snapshot(%d, %d): %d bytes differ from the reference's %d", r[0], r[1], len(got), len(want))
		}
		// And it reads back as exactly those key groups, in key order.
		read := Model{}
		var prev []byte
		must(t, state.ReadSnapshot(bytes.NewReader(got), func(k, v []byte) error {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Errorf("snapshot key %x after %x", k, prev)
			}
			prev = bytes.Clone(k)
			read[string(k)] = string(v)
			return nil
		}))
		if want := filterKG(m, r[0], r[1]); !maps.Equal(read, want) {
			t.Fatalf("Snapshot(%d, %d) holds %d entries, want %d", r[0], r[1], len(read), len(want))
		}
	}
	// Snapshot does not change the KV.
	s.check(t, kv, m)
}

func (s *suite) testRestore(t *testing.T) {
	src := s.kv(t)
	m := kgModel()
	s.fill(t, src, m)
	all := snapshot(t, src, 0, 0xffff)
	for _, r := range [][2]state.KeyGroup{{0, 0xffff}, {0, 127}, {0, 0}, {3, 3}, {40, 79}, {127, 0xffff}, {500, 600}} {
		dst := s.kv(t)
		must(t, dst.Restore(bytes.NewReader(all), r[0], r[1]))
		want := filterKG(m, r[0], r[1])
		s.check(t, dst, want)
		// A round trip gives the same bytes.
		if got, want := snapshot(t, dst, 0, 0xffff), want.Snapshot(t, 0, 0xffff); !bytes.Equal(got, want) {
			t.Fatalf("snapshot after Restore(%d, %d) differs from the reference", r[0], r[1])
		}
		must(t, dst.Close())
	}
	// Restoring an empty snapshot changes nothing.
	dst := s.kv(t)
	must(t, dst.Set(Key(1, 1), []byte("keep")))
	must(t, dst.Restore(bytes.NewReader(Model{}.Snapshot(t, 0, 0xffff)), 0, 0xffff))
	s.check(t, dst, Model{string(Key(1, 1)): "keep"})
}

func (s *suite) testRestoreReplaces(t *testing.T) {
	src := s.kv(t)
	snap := Model{
		string(Key(1, 'a')): "new-a",
		string(Key(1, 'b')): "",
		string(Key(2, 'c')): "new-c",
		string(Key(4, 'd')): "outside",
	}
	s.fill(t, src, snap)
	dst := s.kv(t)
	have := Model{
		string(Key(1, 'a')): "old value of a, longer",
		string(Key(1, 'b')): "old-b",
		string(Key(1, 'z')): "untouched",
		string(Key(4, 'd')): "not in the restored range",
	}
	s.fill(t, dst, have)
	must(t, dst.Restore(bytes.NewReader(snapshot(t, src, 0, 10)), 0, 3))
	want := Model{
		string(Key(1, 'a')): "new-a",
		string(Key(1, 'b')): "",
		string(Key(1, 'z')): "untouched",
		string(Key(2, 'c')): "new-c",
		string(Key(4, 'd')): "not in the restored range",
	}
	s.check(t, dst, want)
}

// plainReader hides every method but Read.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// testRestoreStream restores from readers that are not seekable, among them
// one stream of several snapshots read through a bufio.Reader: each Restore
// must consume exactly one snapshot.
func (s *suite) testRestoreStream(t *testing.T) {
	src := s.kv(t)
	m := kgModel()
	s.fill(t, src, m)
	var stream bytes.Buffer
	ranges := [][2]state.KeyGroup{{0, 9}, {10, 10}, {11, 11}, {12, 100}, {101, 0xffff}}
	for _, r := range ranges {
		stream.Write(snapshot(t, src, r[0], r[1]))
	}
	dst := s.kv(t)
	br := bufio.NewReaderSize(plainReader{&stream}, 16)
	for _, r := range ranges {
		// Skip key group 11 when restoring.
		first, last := r[0], r[1]
		if first == 11 {
			first = 12
		}
		must(t, dst.Restore(br, first, last))
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("stream not consumed exactly: read %d more bytes, %v", n, err)
	}
	want := maps.Clone(m)
	for k := range filterKG(m, 11, 11) {
		delete(want, k)
	}
	s.check(t, dst, want)
	// A plain reader of one snapshot.
	dst2 := s.kv(t)
	must(t, dst2.Restore(plainReader{bytes.NewReader(snapshot(t, src, 0, 0xffff))}, 20, 30))
	s.check(t, dst2, filterKG(m, 20, 30))
}

// testRescale moves state by key-group ranges between parallelisms: 4 -> 2,
// 1 -> 4 and 2 -> 3, as a restore with another parallelism does.
func (s *suite) testRescale(t *testing.T) {
	const maxPar = state.DefaultMaxParallelism
	m := kgModel()
	delete(m, string(Key(0xffff, 1))) // within [0, maxPar)
	for _, c := range [][2]int{{4, 2}, {1, 4}, {2, 3}} {
		from, to := c[0], c[1]
		t.Run(fmt.Sprintf("%dto%d", from, to), func(t *testing.T) {
			var snaps [][]byte
			for i := range from {
				first, last := state.KeyGroupRange(i, maxPar, from)
				kv := s.kv(t)
				s.fill(t, kv, filterKG(m, first, last))
				// Snapshots cover only the subtask's key groups, as a
				// checkpoint writes them.
				snaps = append(snaps, snapshot(t, kv, first, last))
				must(t, kv.Close())
			}
			union := Model{}
			for i := range to {
				first, last := state.KeyGroupRange(i, maxPar, to)
				kv := s.kv(t)
				for _, snap := range snaps {
					must(t, kv.Restore(bytes.NewReader(snap), first, last))
				}
				got := Contents(t, kv)
				want := filterKG(m, first, last)
				s.check(t, kv, want)
				for k, v := range got {
					if _, dup := union[k]; dup {
						t.Fatalf("key %x restored twice", k)
					}
					union[k] = v
				}
				must(t, kv.Close())
			}
			if !maps.Equal(union, m) {
				t.Fatalf("union of the restored KVs has %d keys, want %d", len(union), len(m))
			}
		})
	}
}

func (s *suite) testCorruptSnapshot(t *testing.T) {
	src := s.kv(t)
	m := Model{}
	for i := range 40 {
		m[string(Key(state.KeyGroup(i%4), byte(i), 'k'))] = fmt.Sprintf("value %d", i)
	}
	m[string(Key(2, 0xff))] = ""
	s.fill(t, src, m)
	good := snapshot(t, src, 0, 0xffff)

	dst := s.kv(t)
	base := Model{string(Key(9, 'p')): "present"}
	s.fill(t, dst, base)
	// A failed Restore changes nothing, and the KV stays usable.
	checkUsable := func(what string) {
		t.Helper()
		if got := Contents(t, dst); !maps.Equal(got, base) {
			t.Fatalf("%s: a failed Restore changed the KV:\n got  %s\n want %s", what, format(got), format(base))
		}
		s.checkStats(t, dst, base)
		must(t, dst.Set(Key(9, 'q'), []byte("usable")))
		if v, ok := mustGet(t, dst, Key(9, 'q')); !ok || string(v) != "usable" {
			t.Fatalf("%s: KV not usable after a failed Restore", what)
		}
		must(t, dst.Delete(Key(9, 'q')))
	}
	restoreFails := func(what string, data []byte) {
		t.Helper()
		// Alternate seekable and plain readers (backends may read a
		// seekable snapshot twice and copy a plain one first).
		var r io.Reader = bytes.NewReader(data)
		if len(data)%2 == 1 {
			r = plainReader{r}
		}
		err := dst.Restore(r, 0, 0xffff)
		if err == nil {
			t.Fatalf("%s: Restore succeeded", what)
		}
		if !errors.Is(err, state.ErrBadSnapshot) {
			t.Fatalf("%s: Restore error %v does not wrap ErrBadSnapshot", what, err)
		}
		checkUsable(what)
	}
	// Every truncation and single-byte corruption (every fifth in short
	// mode).
	step := 1
	if testing.Short() {
		step = 5
	}
	for n := 0; n < len(good); n += step {
		restoreFails(fmt.Sprintf("truncated to %d of %d bytes", n, len(good)), good[:n])
	}
	for i := 0; i < len(good); i += step {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			restoreFails(fmt.Sprintf("byte %d xor %#x", i, x), bad)
		}
	}
	// Something else entirely.
	restoreFails("not a snapshot", []byte("PK\x03\x04 this is a zip file, not a snapshot at all"))
	restoreFails("empty input", nil)
	// And a good snapshot still restores.
	must(t, dst.Restore(bytes.NewReader(good), 0, 0xffff))
	want := maps.Clone(m)
	maps.Copy(want, base)
	s.check(t, dst, want)
}

func (s *suite) testStats(t *testing.T) {
	kv := s.kv(t)
	m := Model{}
	s.check(t, kv, m)
	if st := kv.Stats(); st != (state.KVStats{}) && s.cfg.exactStats {
		t.Fatalf("Stats of an empty KV = %+v", st)
	}
	set := func(k []byte, v string) {
		t.Helper()
		m[string(k)] = v
		must(t, kv.Set(k, []byte(v)))
		s.checkStats(t, kv, m)
	}
	set(Key(1, 'a'), "12345")
	set(Key(1, 'a'), "123")       // shrink
	set(Key(1, 'a'), "123456789") // grow
	set(Key(1, 'b'), "")
	set(Key(1, 'b'), "")
	for i := range 100 {
		set(Key(2, byte(i)), "v")
	}
	must(t, kv.Delete(Key(1, 'a')))
	delete(m, string(Key(1, 'a')))
	s.checkStats(t, kv, m)
	must(t, kv.Delete(Key(1, 'a'))) // absent
	s.checkStats(t, kv, m)
	must(t, kv.DeleteRange(Key(2, 10), Key(2, 90)))
	for _, k := range m.Range(Key(2, 10), Key(2, 90)) {
		delete(m, k)
	}
	s.checkStats(t, kv, m)
	must(t, kv.DeleteRange(Key(2, 10), Key(2, 90))) // again: nothing left there
	s.checkStats(t, kv, m)
	snap := snapshot(t, kv, 0, 0xffff)
	must(t, kv.Restore(bytes.NewReader(snap), 0, 0xffff)) // replaces every key
	s.check(t, kv, m)
	must(t, kv.DeleteRange(nil, nil))
	s.check(t, kv, Model{})
	must(t, kv.Restore(bytes.NewReader(snap), 2, 2))
	s.check(t, kv, filterKG(m, 2, 2))
}

func (s *suite) testClosed(t *testing.T) {
	kv := s.open(t)
	must(t, kv.Set(Key(1, 1), []byte("x")))
	must(t, kv.Close())
	must(t, kv.Close()) // idempotent
	k := Key(1, 1)
	if _, _, err := kv.Get(k); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if err := kv.Set(k, nil); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Set after Close: %v", err)
	}
	if err := kv.Delete(k); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Delete after Close: %v", err)
	}
	if err := kv.DeleteRange(nil, nil); !errors.Is(err, state.ErrClosed) {
		t.Errorf("DeleteRange after Close: %v", err)
	}
	if err := kv.Scan(nil, nil, func(k, v []byte) bool { return true }); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Scan after Close: %v", err)
	}
	var buf bytes.Buffer
	if err := kv.Snapshot(0, 1, &buf); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Snapshot after Close: %v", err)
	}
	if err := kv.Restore(bytes.NewReader(Model{}.Snapshot(t, 0, 0)), 0, 1); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Restore after Close: %v", err)
	}
}

// testModel runs random operations against the KV and a Model and compares
// them after each.
func (s *suite) testModel(t *testing.T) {
	// Few distinct bytes so that keys collide, share prefixes and cross
	// key-group boundaries.
	kgGen := rapid.SampledFrom([]state.KeyGroup{0, 1, 2, 0xff, 0x100, 0xffff})
	byteGen := rapid.SampledFrom([]byte{0x00, 0x01, 'a', 0x7f, 0x80, 0xfe, 0xff})
	keyGen := rapid.Custom(func(t *rapid.T) []byte {
		return Key(kgGen.Draw(t, "kg"), rapid.SliceOfN(byteGen, 0, 9).Draw(t, "suffix")...)
	})
	boundGen := rapid.OneOf(keyGen, rapid.Just([]byte(nil)), rapid.SliceOfN(byteGen, 0, 3))
	valueGen := rapid.OneOf(rapid.SliceOfN(rapid.Byte(), 0, 40), rapid.Just([]byte{}))

	rapid.Check(t, func(rt *rapid.T) {
		kv := s.open(t)
		defer func() {
			if err := kv.Close(); err != nil {
				rt.Fatalf("Close: %v", err)
			}
		}()
		m := Model{}
		fail := func(format string, args ...any) { rt.Helper(); rt.Fatalf(format, args...) }
		ok := func(err error) {
			rt.Helper()
			if err != nil {
				fail("%v", err)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"Set": func(rt *rapid.T) {
				k, v := keyGen.Draw(rt, "key"), valueGen.Draw(rt, "value")
				ok(kv.Set(k, v))
				m[string(k)] = string(v)
			},
			"Delete": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "key")
				ok(kv.Delete(k))
				delete(m, string(k))
			},
			"DeleteRange": func(rt *rapid.T) {
				start, end := boundGen.Draw(rt, "start"), boundGen.Draw(rt, "end")
				ok(kv.DeleteRange(start, end))
				for _, k := range m.Range(start, end) {
					delete(m, k)
				}
			},
			"Get": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "key")
				v, found, err := kv.Get(k)
				ok(err)
				want, wantFound := m[string(k)]
				if found != wantFound || string(v) != want {
					fail("Get(%x) = %x, %v; want %x, %v", k, v, found, want, wantFound)
				}
			},
			"Scan": func(rt *rapid.T) {
				start, end := boundGen.Draw(rt, "start"), boundGen.Draw(rt, "end")
				limit := rapid.IntRange(1, 50).Draw(rt, "limit")
				var got []string
				ok(kv.Scan(start, end, func(k, v []byte) bool {
					if string(v) != m[string(k)] {
						fail("Scan value of %x = %x, want %x", k, v, m[string(k)])
					}
					got = append(got, string(k))
					return len(got) < limit
				}))
				want := m.Range(start, end)
				want = want[:min(limit, len(want))]
				if !slices.Equal(got, want) {
					fail("Scan[%x, %x) limit %d = %x, want %x", start, end, limit, got, want)
				}
			},
			"SnapshotRestore": func(rt *rapid.T) {
				// Snapshot a key-group range, delete it, restore it.
				first := kgGen.Draw(rt, "first")
				last := kgGen.Draw(rt, "last")
				var buf bytes.Buffer
				ok(kv.Snapshot(first, last, &buf))
				if want := m.Snapshot(rt, first, last); !bytes.Equal(buf.Bytes(), want) {
					fail("Snapshot(%d, %d) differs from the reference", first, last)
				}
				if first > last {
					return
				}
				start, end := state.KeyGroupBounds(first, last)
				ok(kv.DeleteRange(start, end))
				ok(kv.Restore(bytes.NewReader(buf.Bytes()), first, last))
			},
			"": func(rt *rapid.T) {
				// Invariant after each action.
				if got := kv.Stats(); s.cfg.exactStats && got != m.Stats() {
					fail("Stats = %+v, want %+v", got, m.Stats())
				}
			},
		})
		if got := Contents(rt, kv); !maps.Equal(got, m) {
			fail("contents differ:\n got  %s\n want %s", format(got), format(m))
		}
	})
}

// CountingKV counts the lookups (Gets) and writes (Sets) made of a KV,
// for tests that a caller spares its KV the work it need not do.
type CountingKV struct {
	state.KV
	Gets, Sets int
}

// Set implements state.KV.
func (c *CountingKV) Set(k, v []byte) error {
	c.Sets++
	return c.KV.Set(k, v)
}

// Get implements state.KV.
func (c *CountingKV) Get(k []byte) ([]byte, bool, error) {
	c.Gets++
	return c.KV.Get(k)
}
