package checkpoint

import (
	"maps"
	"os"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// model is what the store should hold.
type model struct {
	retain int
	onDisk []int64 // checkpoints with a valid manifest, ascending
	cps    map[int64]modelCP
	bad    map[int64]bool // in onDisk, with a damaged part
	known  map[int64]bool // bad ids the Dir knows of (Latest found them)
	// the pending checkpoint, if any
	pid    int64
	pparts map[string][]byte
}

type modelCP struct {
	meta  []byte
	parts map[string][]byte
}

// complete returns the checkpoints the Dir counts as complete: List's
// answer, the base of retention and of Begin's id check.
func (m *model) complete() []int64 {
	var ids []int64
	for _, id := range m.onDisk {
		if !m.known[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// newest is the id Begin must exceed.
func (m *model) newest() int64 {
	c := m.complete()
	if len(c) == 0 {
		return 0
	}
	return c[len(c)-1]
}

// latest is the checkpoint Latest must return, 0 for none.
func (m *model) latest() int64 {
	for i := len(m.onDisk) - 1; i >= 0; i-- {
		if !m.bad[m.onDisk[i]] {
			return m.onDisk[i]
		}
	}
	return 0
}

// remove forgets checkpoint id (pruned or replaced).
func (m *model) remove(id int64) {
	m.onDisk = slices.DeleteFunc(m.onDisk, func(x int64) bool { return x == id })
	delete(m.bad, id)
	delete(m.known, id)
	delete(m.cps, id)
}

// begun records Begin(id), which replaces a damaged checkpoint id.
func (m *model) begun(id int64) {
	m.remove(id)
	m.pid, m.pparts = id, map[string][]byte{}
}

// committed records a complete checkpoint; pruned says whether the prune
// after it ran.
func (m *model) committed(meta []byte, pruned bool) {
	// Sorted: a damaged newer checkpoint may be on disk.
	m.onDisk = append(m.onDisk, m.pid)
	slices.Sort(m.onDisk)
	m.cps[m.pid] = modelCP{meta: meta, parts: m.pparts}
	m.pid, m.pparts = 0, nil
	if c := m.complete(); pruned && len(c) > m.retain {
		cutoff := c[len(c)-m.retain]
		for _, id := range slices.Clone(m.onDisk) {
			if id < cutoff {
				m.remove(id)
			}
		}
	}
}

// propHarness drives a Dir and the model side by side.
type propHarness struct {
	dir     string
	crashAt string // the Crash hook panics here; "" never
	s       *Dir
	p       Pending
	m       model
}

func (h *propHarness) open(t *rapid.T) {
	s, err := Open(h.dir, Options{Retain: h.m.retain, Crash: func(point string) {
		if point == h.crashAt {
			h.crashAt = ""
			panic(crashPanic(point))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.s, h.p = s, nil
	h.m.pid, h.m.pparts = 0, nil // a restart loses the pending checkpoint
	clear(h.m.known)             // and what Latest found
}

// begin starts a checkpoint at a valid id unless one is pending.
func (h *propHarness) ensurePending(t *rapid.T) {
	if h.p != nil {
		return
	}
	id := h.m.newest() + rapid.Int64Range(1, 3).Draw(t, "id step")
	p, err := h.s.Begin(id)
	if err != nil {
		t.Fatalf("Begin(%d): %v", id, err)
	}
	h.p = p
	h.m.begun(id)
}

var propNames = []string{"source/0", "source/1", "window/0", "window/1", "window/2", "timers", "sink/0"}

func (h *propHarness) begin(t *rapid.T) {
	if h.p != nil {
		t.Skip("a checkpoint is pending")
	}
	newest := h.m.newest()
	id := rapid.Int64Range(max(newest-2, -1), newest+3).Draw(t, "id")
	p, err := h.s.Begin(id)
	if id <= newest || id <= 0 {
		if err == nil {
			t.Fatalf("Begin(%d) succeeded with newest %d", id, newest)
		}
		return
	}
	if err != nil {
		t.Fatalf("Begin(%d): %v", id, err)
	}
	h.p = p
	h.m.begun(id)
}

func (h *propHarness) write(t *rapid.T) {
	if h.p == nil {
		t.Skip("nothing pending")
	}
	name := rapid.SampledFrom(propNames).Draw(t, "name")
	data := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "data")
	err := h.p.WritePart(name, data)
	if _, dup := h.m.pparts[name]; dup {
		if err == nil {
			t.Fatalf("duplicate WritePart(%q) succeeded", name)
		}
		return
	}
	if err != nil {
		t.Fatalf("WritePart(%q): %v", name, err)
	}
	h.m.pparts[name] = data
}

func (h *propHarness) commit(t *rapid.T) {
	if h.p == nil {
		t.Skip("nothing pending")
	}
	meta := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "meta")
	if err := commitMeta(h.p, meta); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	h.p = nil
	h.m.committed(meta, true)
}

func (h *propHarness) abort(t *rapid.T) {
	if h.p == nil {
		t.Skip("nothing pending")
	}
	if err := h.p.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	h.p, h.m.pid, h.m.pparts = nil, 0, nil
}

// crash kills the "process" at a random point (or between calls, "") and
// restarts it.
func (h *propHarness) crash(t *rapid.T) {
	point := rapid.SampledFrom(append([]string{""}, crashPoints...)).Draw(t, "point")
	switch point {
	case "":
		// Killed between calls: whatever is pending is lost.
	case CrashPartWritten:
		h.ensurePending(t)
		var name string
		for _, n := range propNames {
			if _, ok := h.m.pparts[n]; !ok {
				name = n
				break
			}
		}
		if name == "" {
			t.Skip("every name written")
		}
		h.crashAt = point
		got, err := catchCrash(func() error { return h.p.WritePart(name, []byte(name)) })
		if got != point {
			t.Fatalf("WritePart: crashed at %q, err %v; want a crash at %q", got, err, point)
		}
	default:
		h.ensurePending(t)
		meta := []byte(point)
		h.crashAt = point
		got, err := catchCrash(func() error { return commitMeta(h.p, meta) })
		if got != point {
			t.Fatalf("Commit: crashed at %q, err %v; want a crash at %q", got, err, point)
		}
		if completeAfter(point) {
			h.m.committed(meta, point == CrashAfterRetain)
		}
	}
	h.crashAt = ""
	h.open(t)
}

// damage flips a byte of, extends or deletes a part of a checkpoint.
func (h *propHarness) damage(t *rapid.T) {
	// Only intact ones: a second flip of the same bit would repair one.
	intact := slices.DeleteFunc(slices.Clone(h.m.onDisk), func(id int64) bool { return h.m.bad[id] })
	if len(intact) == 0 {
		t.Skip("no intact checkpoint")
	}
	id := rapid.SampledFrom(intact).Draw(t, "damaged id")
	names := slices.Sorted(maps.Keys(h.m.cps[id].parts))
	if len(names) == 0 {
		t.Skip("no part")
	}
	name := rapid.SampledFrom(names).Draw(t, "damaged part")
	file := partPath(t, h.dir, id, name)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	switch how := rapid.IntRange(0, 2).Draw(t, "how"); {
	case how == 0 && len(b) > 0:
		b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		err = os.WriteFile(file, b, 0o644)
	case how == 1:
		err = os.Remove(file)
	default:
		err = os.WriteFile(file, append(b, 0), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	h.m.bad[id] = true
}

func (h *propHarness) reopen(t *rapid.T) {
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	h.open(t)
}

func (h *propHarness) check(t *rapid.T) {
	cp, ok, err := h.s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	latest := h.m.latest()
	if latest == 0 {
		if ok {
			t.Fatalf("Latest = %d, model has none", cp.ID)
		}
	} else if !ok || cp.ID != latest {
		t.Fatalf("Latest = %v (ok %v), model %d", cp, ok, latest)
	}
	// Latest found every checkpoint above the one it returned damaged.
	for _, id := range h.m.onDisk {
		if id > latest {
			h.m.known[id] = true
		}
	}
	if ok {
		mc := h.m.cps[latest]
		if string(cp.Meta) != string(mc.meta) {
			t.Fatalf("checkpoint %d: meta %q, model %q", latest, cp.Meta, mc.meta)
		}
		if len(cp.Parts) != len(mc.parts) {
			t.Fatalf("checkpoint %d: parts %q, model has %d", latest, cp.Parts, len(mc.parts))
		}
		for name, want := range mc.parts {
			got, err := h.s.ReadPart(cp, name)
			if err != nil || string(got) != string(want) {
				t.Fatalf("checkpoint %d: ReadPart(%q) = %q, %v; model %q", latest, name, got, err, want)
			}
		}
	}

	ids, err := h.s.List()
	if err != nil {
		t.Fatal(err)
	}
	if want := h.m.complete(); !slices.Equal(ids, want) {
		t.Fatalf("List = %v, model %v (on disk %v, damaged %v)", ids, want, h.m.onDisk, h.m.bad)
	}
	// No garbage: the directories are the complete ones and the pending one.
	want := slices.Clone(h.m.onDisk)
	if h.m.pid != 0 {
		want = append(want, h.m.pid)
		slices.Sort(want)
	}
	if dirs := chkDirs(t, h.dir); !slices.Equal(dirs, want) {
		t.Fatalf("directories %v, want %v", dirs, want)
	}
}

// TestPropertyModel runs random sequences of begin, write, commit, abort,
// crash at a random point, restart, and damage to a part; after each step
// the store's Latest (with its meta and parts), List and directories match
// a simple model.
func TestPropertyModel(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp(base, "prop")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		h := &propHarness{dir: dir, m: model{
			retain: rapid.IntRange(1, 3).Draw(t, "retain"),
			cps:    map[int64]modelCP{},
			bad:    map[int64]bool{},
			known:  map[int64]bool{},
		}}
		h.open(t)
		t.Repeat(map[string]func(*rapid.T){
			"begin":  h.begin,
			"write":  h.write,
			"commit": h.commit,
			"abort":  h.abort,
			"crash":  h.crash,
			"reopen": h.reopen,
			"damage": h.damage,
			"":       h.check,
		})
	})
}
