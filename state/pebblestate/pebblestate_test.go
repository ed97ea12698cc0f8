package pebblestate_test

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/state/pebblestate"
	"github.com/weirstream/weir/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small keeps the tests' memory and files small.
var small = pebblestate.Options{CacheSize: 1 << 20, MemTableSize: 1 << 20, ExactStats: true}

func open(t testing.TB, o pebblestate.Options) *pebblestate.KV {
	t.Helper()
	kv, err := pebblestate.Open(filepath.Join(t.TempDir(), "db"), o)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestKV(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.KV { return open(t, small) }, statetest.ExactStats())
}

// TestKVEstimatedStats runs the suite with the default, estimated stats.
func TestKVEstimatedStats(t *testing.T) {
	o := small
	o.ExactStats = false
	statetest.Run(t, func(t *testing.T) state.KV { return open(t, o) })
}

func TestStatsEstimate(t *testing.T) {
	kv := open(t, pebblestate.Options{CacheSize: 1 << 20, MemTableSize: 1 << 20})
	defer kv.Close()
	want := func(what string, keys, bytes int64) {
		t.Helper()
		if got := kv.Stats(); got != (state.KVStats{Keys: keys, Bytes: bytes}) {
			t.Fatalf("%s: Stats = %+v, want %d keys, %d bytes", what, got, keys, bytes)
		}
	}
	set := func(k []byte, v string) {
		t.Helper()
		if err := kv.Set(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	want("empty", 0, 0)
	set(statetest.Key(1, 'a'), "12345")      // 3+5
	set(statetest.Key(1, 'a'), "123")        // overwrite: counted as new, 3+3
	set(statetest.Key(2, 'b'), "1234567890") // 3+10
	want("after overwrite", 3, 27)
	if err := kv.Delete(statetest.Key(9, 'z')); err != nil { // absent: counted as present
		t.Fatal(err)
	}
	want("after Delete of an absent key", 2, 24)
	// A snapshot of part of the key groups does not see every key.
	var buf bytes.Buffer
	if err := kv.Snapshot(1, 1, &buf); err != nil {
		t.Fatal(err)
	}
	want("after a partial snapshot", 2, 24)
	// A snapshot of a range holding every key recounts.
	if err := kv.Snapshot(0, 5, &buf); err != nil {
		t.Fatal(err)
	}
	want("after a snapshot of every key", 2, 19)
	set(statetest.Key(2, 'b'), "x")
	want("after another overwrite", 3, 23)
	// A scan that stops early does not recount; one to the end does.
	if err := kv.Scan(nil, nil, func(k, v []byte) bool { return false }); err != nil {
		t.Fatal(err)
	}
	want("after a partial scan", 3, 23)
	if err := kv.Scan(nil, nil, func(k, v []byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	want("after a full scan", 2, 10)
	// DeleteRange is exact.
	if err := kv.DeleteRange(statetest.Key(2), statetest.Key(3)); err != nil {
		t.Fatal(err)
	}
	want("after DeleteRange", 1, 6)
}

// TestKVFlushed runs the suite on a KV whose memtable is tiny, so that most
// reads go to sstables, range tombstones and compactions.
func TestKVFlushed(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	o := pebblestate.Options{CacheSize: 64 << 10, MemTableSize: 64 << 10, ExactStats: true}
	statetest.Run(t, func(t *testing.T) state.KV { return open(t, o) }, statetest.ExactStats())
}

// TestSameSnapshotAsMemstate writes the same operations to both backends
// and compares their snapshots byte for byte.
func TestSameSnapshotAsMemstate(t *testing.T) {
	p := open(t, small)
	defer p.Close()
	m := memstate.NewKV()
	defer m.Close()
	var key []byte
	for i := range 20000 {
		key = statetest.BenchKey(key[:0], i%7000)
		val := []byte(strconv.Itoa(i))
		for _, kv := range []state.KV{p, m} {
			var err error
			switch {
			case i%13 == 0:
				err = kv.Delete(key)
			case i%997 == 0:
				end := append(bytes.Clone(key[:3]), 0xff)
				err = kv.DeleteRange(key, end)
			default:
				err = kv.Set(key, val)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if ps, ms := p.Stats(), m.Stats(); ps != ms {
		t.Fatalf("stats differ: pebble %+v, memstate %+v", ps, ms)
	}
	for _, r := range [][2]state.KeyGroup{{0, 127}, {0, 0xffff}, {10, 20}, {64, 64}} {
		var pb, mb bytes.Buffer
		if err := p.Snapshot(r[0], r[1], &pb); err != nil {
			t.Fatal(err)
		}
		if err := m.Snapshot(r[0], r[1], &mb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pb.Bytes(), mb.Bytes()) {
			t.Fatalf("snapshots of %v differ: pebble %d bytes, memstate %d", r, pb.Len(), mb.Len())
		}
	}
}

func TestOpenRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if kv, err := pebblestate.Open(dir, pebblestate.Options{RemoveOnClose: true}); err == nil {
		kv.Close()
		t.Fatal("Open of a non-empty directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Fatalf("Open touched a foreign file: %v", err)
	}
}

func TestRemoveOnClose(t *testing.T) {
	for _, remove := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "db")
		kv, err := pebblestate.Open(dir, pebblestate.Options{RemoveOnClose: remove})
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.Set(statetest.Key(1, 1), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(dir)
		if remove != os.IsNotExist(err) {
			t.Fatalf("RemoveOnClose=%v: Stat after Close: %v", remove, err)
		}
	}
}

func BenchmarkKV(b *testing.B) {
	statetest.Bench(b, func(b *testing.B) state.KV {
		return open(b, pebblestate.Options{RemoveOnClose: true})
	})
}

// TestBigRSS writes 5 million keys of about 100 bytes (16-byte keys, 84-byte
// random values: 500 MB of state) with the default options, snapshots them
// to a file and restores that into a second KV, and checks that the peak
// resident set stays under 1 GiB. Run with WEIR_BIG=1.
func TestBigRSS(t *testing.T) {
	if os.Getenv("WEIR_BIG") != "1" {
		t.Skip("set WEIR_BIG=1 to run")
	}
	const n = 5_000_000
	kv := open(t, pebblestate.Options{RemoveOnClose: true})
	defer kv.Close()
	// Values are windows of a random pool, so they do not compress away.
	pool := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	start := time.Now()
	var key []byte
	for i := range n {
		key = statetest.BenchKey(key[:0], i)
		off := (i * 97) % (len(pool) - 84)
		if err := kv.Set(key, pool[off:off+84]); err != nil {
			t.Fatal(err)
		}
		if i%1_000_000 == 999_999 {
			t.Logf("%d keys: VmHWM %d MiB, VmRSS %d MiB", i+1, status(t, "VmHWM")>>20, status(t, "VmRSS")>>20)
		}
	}
	st := kv.Stats()
	disk, err := kv.DiskUsage()
	if err != nil {
		t.Fatal(err)
	}
	// Read everything back once.
	count := 0
	if err := kv.Scan(nil, nil, func(k, v []byte) bool { count++; return true }); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d keys in %v, %d MiB of keys and values, %d MiB on disk, scanned %d; VmHWM %d MiB",
		st.Keys, time.Since(start).Round(time.Millisecond), st.Bytes>>20, disk>>20, count, status(t, "VmHWM")>>20)
	if st.Keys != n || count != n {
		t.Fatalf("Stats.Keys = %d, scanned %d, want %d", st.Keys, count, n)
	}

	// Snapshot to a file and restore into a second KV.
	f, err := os.Create(filepath.Join(t.TempDir(), "snap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start = time.Now()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := kv.Snapshot(0, state.DefaultMaxParallelism-1, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	t.Logf("snapshot: %d MiB in %v; VmHWM %d MiB", size>>20, time.Since(start).Round(time.Millisecond), status(t, "VmHWM")>>20)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	kv2 := open(t, pebblestate.Options{RemoveOnClose: true})
	defer kv2.Close()
	if err := kv2.Restore(f, 0, state.DefaultMaxParallelism-1); err != nil {
		t.Fatal(err)
	}
	if st2 := kv2.Stats(); st2 != st {
		t.Fatalf("restored Stats = %+v, want %+v", st2, st)
	}
	hwm := status(t, "VmHWM")
	t.Logf("restore: %v; peak RSS (VmHWM) %d MiB", time.Since(start).Round(time.Millisecond), hwm>>20)
	if hwm >= 1<<30 {
		t.Fatalf("peak RSS %d MiB, want < 1 GiB", hwm>>20)
	}
}

// status returns a /proc/self/status field in bytes.
func status(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return kb << 10
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
