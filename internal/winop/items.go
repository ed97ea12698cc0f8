package winop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/state"
)

// A snapshot's items: the snapshot format cut into keyed pieces, so that a
// changelog can write only the pieces that changed since the last
// checkpoint (internal/group's keyed changelog) and a restore can put the
// newest piece of each key together again. Items are a view of the
// format, not a format of their own: SplitSnapshot and JoinSnapshot need
// no codecs (every key and value in a snapshot is length-prefixed), and
// JoinSnapshot's output is a snapshot Restore reads.
//
// An item's id names what it holds, and its value is the bytes the
// snapshot holds for it:
//
//	ItemHead                        magic, watermark, processing time, fixed counters
//	ItemTail                        the counters written under tags of their own
//	'e' window key                  a window's contents (the entry)
//	's' key                         a key's merging set
//	'p' key index                   a sliding pane's accumulator
//	'T' or 'P' time window key      an event-time or processing-time timer (no value)
//
// window, key, time and index are their snapshot bytes (two varints, a
// length-prefixed key, a varint, a varint).
const (
	ItemHead = "h"
	ItemTail = "z"
)

// IsSnapshot reports whether b is a window operator snapshot of this
// weir's format (a part SplitSnapshot can cut).
func IsSnapshot(b []byte) bool { return bytes.HasPrefix(b, []byte(snapshotMagic)) }

// SplitSnapshot calls fn with each item of snapshot src. The id and value
// alias scratch space and src: fn must copy what it keeps.
func SplitSnapshot(src []byte, fn func(id, val []byte)) error {
	if !IsSnapshot(src) {
		return errors.New("weir: not a window operator snapshot (bad magic)")
	}
	r := state.Reader{Buf: src[len(snapshotMagic):]}
	at := func() int { return len(src) - len(r.Buf) }
	r.Int()
	r.Int()
	for range fixedCounters {
		r.Int()
	}
	if r.Err != nil {
		return fmt.Errorf("weir: window operator snapshot is corrupt: %w", r.Err)
	}
	fn([]byte(ItemHead), src[:at()])
	var id, tail []byte
	// span reads one item of the reader and returns its bytes.
	span := func(read func()) []byte {
		s := at()
		read()
		return src[s:at()]
	}
	bytesField := func() { r.Bytes() }
	windowField := func() { r.Int(); r.Int() }
	for r.Err == nil {
		tag := r.Uint()
		if tag == tagEnd || r.Err != nil {
			break
		}
		switch tag {
		case tagTrailing, tagUnchanged:
			s := at()
			r.Int()
			tail = binary.AppendUvarint(tail, tag)
			tail = append(tail, src[s:at()]...)
		case tagEntries:
			x := span(windowField)
			n := r.Uint()
			for ; n > 0 && r.Err == nil; n-- {
				k := span(bytesField)
				v := span(bytesField)
				if r.Err == nil {
					id = append(append(append(id[:0], 'e'), x...), k...)
					fn(id, v)
				}
			}
		case tagSet:
			k := span(bytesField)
			v := span(bytesField)
			if r.Err == nil {
				id = append(append(id[:0], 's'), k...)
				fn(id, v)
			}
		case tagPane:
			k := span(bytesField)
			idx := span(func() { r.Int() })
			v := span(bytesField)
			if r.Err == nil {
				id = append(append(append(id[:0], 'p'), k...), idx...)
				fn(id, v)
			}
		case tagEventTimers, tagProcTimers:
			c := byte('T')
			if tag == tagProcTimers {
				c = 'P'
			}
			tw := span(func() { r.Int(); r.Int(); r.Int() })
			n := r.Uint()
			for ; n > 0 && r.Err == nil; n-- {
				k := span(bytesField)
				if r.Err == nil {
					id = append(append(append(id[:0], c), tw...), k...)
					fn(id, nil)
				}
			}
		default:
			return fmt.Errorf("weir: window operator snapshot: unknown record tag %d", tag)
		}
	}
	if r.Err != nil {
		return fmt.Errorf("weir: window operator snapshot is corrupt: %w", r.Err)
	}
	fn([]byte(ItemTail), tail)
	return nil
}

// JoinSnapshot puts the items items yields (in any order, each id once)
// together into a snapshot that restores what the snapshot they were cut
// from restores. It fails on an id SplitSnapshot does not give, or
// without a head.
func JoinSnapshot(items func(yield func(id, val []byte) bool)) ([]byte, error) {
	var head, tail []byte
	// The snapshot's sections in the order Snapshot writes them.
	var entries, sets, panes, evt, proc []byte
	var err error
	items(func(id, val []byte) bool {
		switch {
		case string(id) == ItemHead:
			head = val
		case string(id) == ItemTail:
			tail = val
		case len(id) == 0:
			err = errors.New("weir: an empty snapshot item id")
		default:
			rest := id[1:]
			switch id[0] {
			case 'e':
				x, k, ok := cutVarints(rest, 2)
				if !ok {
					err = fmt.Errorf("weir: bad entry item %q", id)
					break
				}
				entries = binary.AppendUvarint(entries, tagEntries)
				entries = append(entries, x...)
				entries = binary.AppendUvarint(entries, 1)
				entries = append(append(entries, k...), val...)
			case 's':
				sets = binary.AppendUvarint(sets, tagSet)
				sets = append(append(sets, rest...), val...)
			case 'p':
				panes = binary.AppendUvarint(panes, tagPane)
				panes = append(append(panes, rest...), val...)
			case 'T', 'P':
				tw, k, ok := cutVarints(rest, 3)
				if !ok {
					err = fmt.Errorf("weir: bad timer item %q", id)
					break
				}
				dst, tag := &evt, tagEventTimers
				if id[0] == 'P' {
					dst, tag = &proc, tagProcTimers
				}
				*dst = binary.AppendUvarint(*dst, tag)
				*dst = append(*dst, tw...)
				*dst = binary.AppendUvarint(*dst, 1)
				*dst = append(*dst, k...)
			default:
				err = fmt.Errorf("weir: unknown snapshot item %q", id)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !IsSnapshot(head) {
		return nil, errors.New("weir: the snapshot items have no head")
	}
	out := make([]byte, 0, len(head)+len(entries)+len(sets)+len(panes)+len(evt)+len(proc)+len(tail)+1)
	for _, b := range [][]byte{head, entries, sets, panes, evt, proc, tail} {
		out = append(out, b...)
	}
	return binary.AppendUvarint(out, tagEnd), nil
}

// cutVarints cuts n varints off the front of b.
func cutVarints(b []byte, n int) (front, rest []byte, ok bool) {
	i := 0
	for range n {
		_, k := binary.Varint(b[i:])
		if k <= 0 {
			return nil, nil, false
		}
		i += k
	}
	return b[:i], b[i:], true
}
