package state_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/weirstream/weir/state"
)

type entry struct{ k, v string }

func writeSnap(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := state.WriteSnapshot(&buf, func(fn func(k, v []byte) bool) error {
		for _, e := range entries {
			if !fn([]byte(e.k), []byte(e.v)) {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readSnap(r io.Reader) ([]entry, error) {
	var out []entry
	err := state.ReadSnapshot(r, func(k, v []byte) error {
		out = append(out, entry{string(k), string(v)})
		return nil
	})
	return out, err
}

// TestSnapshotFormat pins the snapshot format: changing it breaks restoring
// existing checkpoints, so it needs a new version number.
func TestSnapshotFormat(t *testing.T) {
	got := writeSnap(t, entry{"\x00\x01a", "vw"}, entry{"\x00\x02", ""})
	body := "574b56530001" + // "WKVS", version 1
		"03" + "000161" + "02" + "7677" + // key 00 01 'a', value "vw"
		"02" + "0002" + "00" + // key 00 02, empty value
		"00" + "0000000000000002" // end marker, 2 entries
	raw, _ := hex.DecodeString(body)
	want := binary.BigEndian.AppendUint32(raw, crc32.Checksum(raw, crc32.MakeTable(crc32.Castagnoli)))
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot bytes\n got  %x\n want %x", got, want)
	}
	if hex.EncodeToString(want[len(want)-4:]) != "b60d96fb" {
		t.Fatalf("CRC-32C = %x", want[len(want)-4:])
	}
	entries, err := readSnap(bytes.NewReader(got))
	if err != nil || len(entries) != 2 || entries[0] != (entry{"\x00\x01a", "vw"}) || entries[1] != (entry{"\x00\x02", ""}) {
		t.Fatalf("read back %q, %v", entries, err)
	}
	// The empty snapshot.
	empty := writeSnap(t)
	if entries, err := readSnap(bytes.NewReader(empty)); err != nil || len(entries) != 0 {
		t.Fatalf("empty snapshot: %q, %v", entries, err)
	}
	if len(empty) != 6+1+8+4 {
		t.Fatalf("empty snapshot is %d bytes", len(empty))
	}
}

func TestSnapshotLongEntries(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than the reader's chunk
	in := []entry{{"\x00\x00" + long, long}, {"\x00\x01", strings.Repeat("y", 200)}, {"\x00\x02", long + long}}
	got, err := readSnap(bytes.NewReader(writeSnap(t, in...)))
	if err != nil || len(got) != 3 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("entry %d differs", i)
		}
	}
}

func TestWriteSnapshotRejects(t *testing.T) {
	for name, entries := range map[string][]entry{
		"unordered":  {{"\x00\x02", ""}, {"\x00\x01", ""}},
		"duplicate":  {{"\x00\x01", "a"}, {"\x00\x01", "b"}},
		"short key":  {{"\x00", "a"}},
		"empty key":  {{"", "a"}},
		"prefix gap": {{"\x00\x01a", ""}, {"\x00\x01", ""}},
	} {
		err := state.WriteSnapshot(io.Discard, func(fn func(k, v []byte) bool) error {
			for _, e := range entries {
				if !fn([]byte(e.k), []byte(e.v)) {
					break
				}
			}
			return nil
		})
		if err == nil {
			t.Errorf("%s: WriteSnapshot succeeded", name)
		}
	}
	boom := errors.New("boom")
	if err := state.WriteSnapshot(io.Discard, func(func(k, v []byte) bool) error { return boom }); err != boom {
		t.Errorf("iterate error: %v", err)
	}
}

// resum recomputes the CRC of a hand-made snapshot (whose last 4 bytes are
// the CRC).
func resum(b []byte) []byte {
	n := len(b) - 4
	binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestReadSnapshotErrors(t *testing.T) {
	good := writeSnap(t, entry{"\x00\x01a", "vw"}, entry{"\x00\x02", ""})
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := map[string]struct {
		data []byte
		msg  string
	}{
		"magic":     {mod(func(b []byte) []byte { b[0] = 'X'; return resum(b) }), "not a state snapshot"},
		"version":   {mod(func(b []byte) []byte { b[5] = 2; return resum(b) }), "unsupported version 2"},
		"count":     {mod(func(b []byte) []byte { b[len(b)-5] = 3; return resum(b) }), "end marker says 3 entries, read 2"},
		"crc":       {mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "checksum mismatch"},
		"value":     {mod(func(b []byte) []byte { b[11] = 'V'; return b }), "checksum mismatch"},
		"order":     {mod(func(b []byte) []byte { b[8] = 2; return resum(b) }), "is not after"},
		"short key": {mod(func(b []byte) []byte { b[6] = 1; return resum(b) }), "key length 1"},
		"truncated": {good[:len(good)-1], "truncated in the checksum"},
		"no end":    {good[:15], "truncated in the key of entry 1"},
		"mid key":   {good[:8], "truncated in the key of entry 0"},
		"empty":     {nil, "truncated in the header"},
		"huge": {append(append([]byte("WKVS\x00\x01"), binary.AppendUvarint(nil, 1<<40)...), "\x00\x01abc"...),
			"key length 1099511627776"},
		"huge value": {append(append([]byte("WKVS\x00\x01\x02\x00\x01"), binary.AppendUvarint(nil, 1<<31)...), "abc"...),
			"truncated in the value of entry 0"},
	}
	for name, c := range cases {
		_, err := readSnap(bytes.NewReader(c.data))
		if err == nil || !errors.Is(err, state.ErrBadSnapshot) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want ErrBadSnapshot with %q", name, err, c.msg)
		}
	}
	// fn's error is returned as is.
	boom := errors.New("boom")
	err := state.ReadSnapshot(bytes.NewReader(good), func(k, v []byte) error { return boom })
	if err != boom {
		t.Errorf("fn error: %v", err)
	}
}

// TestReadSnapshotStream reads concatenated snapshots through one
// bufio.Reader: each ReadSnapshot consumes exactly its snapshot.
func TestReadSnapshotStream(t *testing.T) {
	a := writeSnap(t, entry{"\x00\x01", "a"})
	b := writeSnap(t, entry{"\x00\x02", "b"}, entry{"\x00\x03", "c"})
	r := bufio.NewReader(bytes.NewReader(append(append(bytes.Clone(a), b...), "tail"...)))
	if got, err := readSnap(r); err != nil || len(got) != 1 {
		t.Fatalf("first: %q, %v", got, err)
	}
	if got, err := readSnap(r); err != nil || len(got) != 2 {
		t.Fatalf("second: %q, %v", got, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "tail" {
		t.Fatalf("rest %q", rest)
	}
}

func TestKeyGroupHelpers(t *testing.T) {
	for _, kg := range []state.KeyGroup{0, 1, 127, 0x100, 0xfffe, 0xffff} {
		k := state.AppendKeyGroup([]byte(nil), kg)
		if len(k) != state.KeyGroupLen || state.KeyGroupOfKey(append(k, 'x')) != kg {
			t.Fatalf("key group %d: %x", kg, k)
		}
	}
	start, end := state.KeyGroupBounds(3, 5)
	if !bytes.Equal(start, []byte{0, 3}) || !bytes.Equal(end, []byte{0, 6}) {
		t.Fatalf("bounds %x %x", start, end)
	}
	start, end = state.KeyGroupBounds(0x100, 0xffff)
	if !bytes.Equal(start, []byte{1, 0}) || end != nil {
		t.Fatalf("bounds %x %x", start, end)
	}
	if state.CheckKey([]byte{1}) != state.ErrShortKey || state.CheckKey([]byte{1, 2}) != nil {
		t.Fatal("CheckKey")
	}
}

// FuzzReadSnapshot: ReadSnapshot never panics, and whatever it accepts
// writes back to the same bytes.
func FuzzReadSnapshot(f *testing.F) {
	f.Add(writeSnap(f))
	f.Add(writeSnap(f, entry{"\x00\x01a", "vw"}, entry{"\x00\x02", ""}))
	f.Add(writeSnap(f, entry{"\xff\xff\xff", strings.Repeat("z", 300)}))
	f.Add([]byte("WKVS\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		entries, err := readSnap(r)
		if err != nil {
			if !errors.Is(err, state.ErrBadSnapshot) {
				t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
			}
			return
		}
		used := data[:len(data)-r.Len()]
		if again := writeSnap(t, entries...); !bytes.Equal(again, used) {
			t.Fatalf("accepted %x but writes back %x", used, again)
		}
	})
}
