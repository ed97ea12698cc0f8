package archive

import (
	"slices"
	"testing"

	"github.com/weirstream/weir/etime"
)

// TestKafkaCodec: a group archive's records read back as written, and
// damaged ones are refused, not misread.
func TestKafkaCodec(t *testing.T) {
	for _, c := range []struct {
		key        string
		start, end etime.Time
		run, pane  int64
		value      []byte
		ids        []string
	}{
		{"\"u1\"", 0, 60_000, 1764547200000, 0, []byte("1\x002\x00"), nil},
		{"\"u\x00x\"", -120_000, -60_000, 7, 12, []byte{}, []string{"a1b2", "", "ledger-3"}},
		{"", etime.MinTime + 1, etime.MaxTime - 1, 1, 1 << 40, []byte("x"), []string{"z"}},
	} {
		k := KafkaKey(c.key, c.start, c.end)
		key, start, end, err := ParseKafkaKey(k)
		if err != nil || key != c.key || start != c.start || end != c.end {
			t.Errorf("ParseKafkaKey(KafkaKey(%q, %d, %d)) = %q, %d, %d, %v", c.key, c.start, c.end, key, start, end, err)
		}
		v := EncodeKafka(c.run, c.pane, c.value, c.ids)
		run, pane, value, ids, err := DecodeKafka(v)
		if err != nil || run != c.run || pane != c.pane || string(value) != string(c.value) || !slices.Equal(ids, append([]string{}, c.ids...)) {
			t.Errorf("DecodeKafka(EncodeKafka(%d, %d, %q, %q)) = %d, %d, %q, %q, %v", c.run, c.pane, c.value, c.ids, run, pane, value, ids, err)
		}
		for i := range len(v) - len(c.value) {
			if _, _, _, _, err := DecodeKafka(v[:i]); err == nil {
				t.Errorf("DecodeKafka of the first %d bytes of %q: no error", i, v)
			}
		}
		if _, _, _, err := ParseKafkaKey(k[:len(k)-1]); err == nil && len(c.key) > 0 {
			t.Errorf("ParseKafkaKey of a cut key: no error")
		}
	}
	if _, _, _, _, err := DecodeKafka(EncodeKafka(1, 1, nil, nil)[1:]); err == nil {
		t.Error("a value without its format: no error")
	}
}
