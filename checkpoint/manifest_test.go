package checkpoint

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestManifestRoundTrip(t *testing.T) {
	entries := []entry{
		{name: "source/0", file: "part-000002-source_0", size: 12, crc: 0xdeadbeef},
		{name: "window/1", file: "part-000001-window_1", size: 1 << 40, crc: 1},
	}
	for _, meta := range [][]byte{nil, []byte("spec=x"), bytes.Repeat([]byte{0, 1, 2}, 1000)} {
		b := encodeManifest(77, meta, entries)
		m, err := decodeManifest(b, 77)
		if err != nil {
			t.Fatal(err)
		}
		if m.id != 77 || !bytes.Equal(m.meta, meta) {
			t.Errorf("id %d meta %q", m.id, m.meta)
		}
		if diff := cmp.Diff(entries, m.entries, cmp.AllowUnexported(entry{})); diff != "" {
			t.Errorf("entries (-want +got):\n%s", diff)
		}
		if _, err := decodeManifest(b, 78); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode under another id = %v", err)
		}
	}
}

// TestManifestLayout pins the format documented in docs/format/checkpoint.md.
func TestManifestLayout(t *testing.T) {
	b := encodeManifest(5, []byte("M"), []entry{{name: "a", file: "part-000001-a", size: 3, crc: 0x04030201}})
	want := []byte("WEIRCKPT" +
		"\x01\x00\x00\x00" + // version
		"\x05\x00\x00\x00\x00\x00\x00\x00" + // id
		"\x01\x00\x00\x00M" + // meta
		"\x01\x00\x00\x00" + // part count
		"\x01\x00a" + "\x0d\x00part-000001-a" + "\x03\x00\x00\x00\x00\x00\x00\x00" + "\x01\x02\x03\x04")
	if !bytes.Equal(b[:len(b)-4], want) {
		t.Fatalf("manifest\n%q\nwant\n%q", b[:len(b)-4], want)
	}
}

// A manifest with a valid checksum but impossible content is still refused.
func TestManifestSemanticChecks(t *testing.T) {
	for name, entries := range map[string][]entry{
		"unsorted":      {{name: "b", file: "part-1", size: 1}, {name: "a", file: "part-2", size: 1}},
		"duplicate":     {{name: "a", file: "part-1"}, {name: "a", file: "part-2"}},
		"shared file":   {{name: "a", file: "part-1"}, {name: "b", file: "part-1"}},
		"bad name":      {{name: "../x", file: "part-1"}},
		"escaping file": {{name: "a", file: "../../etc/passwd"}},
		"other file":    {{name: "a", file: "MANIFEST"}},
		"huge size":     {{name: "a", file: "part-1", size: -1}},
	} {
		if _, err := decodeManifest(encodeManifest(1, nil, entries), 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decode = %v", name, err)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add(encodeManifest(1, []byte("meta"), []entry{{name: "a/b", file: "part-000001-a_b", size: 9, crc: 7}}), int64(1))
	f.Add(encodeManifest(3, nil, nil), int64(3))
	f.Add([]byte("WEIRCKPT"), int64(1))
	f.Fuzz(func(t *testing.T, b []byte, id int64) {
		m, err := decodeManifest(b, id)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		if again := encodeManifest(m.id, m.meta, m.entries); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}
