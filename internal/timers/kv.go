package timers

import (
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// KVService is the timer service with its timers in a state.KV, for state
// larger than memory. A timer is the key
//
//	[key group][tag][timestamp][window end][window start][key]
//
// with the times as order-preserving big-endian bytes and an empty value,
// so each key group's timers are a range in time order. The service keeps
// in memory only the smallest timestamp of each key group with timers.
// Like Service it is owned by one operator instance; a KV error (a broken
// disk) panics, which fails the job.
type KVService[K comparable] struct {
	kv  state.KV
	tag byte
	kc  state.Codec[K]
	kg  func(K) state.KeyGroup
	enc KeyEncoder[K]
	n   int
	// mins holds, per key group with timers, a lower bound of its
	// timestamps: exact unless the group is in stale, whose minimum is
	// looked up again (from the bound on, so that deleted timers before
	// it are not scanned again) when Next needs it.
	mins  map[state.KeyGroup]etime.Time
	stale map[state.KeyGroup]bool

	buf   []byte
	due   []Timer[K]
	order sorter[K]
}

var _ Timers[int] = (*KVService[int])(nil)

// NewKV returns an empty KV-backed service; enc orders timers with equal
// timestamps (W5), kc encodes keys and kg maps them to key groups.
func NewKV[K comparable](kv state.KV, tag byte, enc KeyEncoder[K], kc state.Codec[K], kg func(K) state.KeyGroup) *KVService[K] {
	return &KVService[K]{kv: kv, tag: tag, kc: kc, kg: kg, enc: enc, mins: map[state.KeyGroup]etime.Time{}, stale: map[state.KeyGroup]bool{}}
}

func orderedTime(dst []byte, t etime.Time) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) etime.Time { return etime.Time(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// prefix is the start of key group kg's timers (with ts, of those at ts).
func (s *KVService[K]) prefix(dst []byte, kg state.KeyGroup) []byte {
	return append(state.AppendKeyGroup(dst, kg), s.tag)
}

func (s *KVService[K]) key(t Timer[K]) []byte {
	b := s.prefix(s.buf[:0], s.kg(t.Key))
	b = orderedTime(b, t.TS)
	b = orderedTime(b, t.Window.End)
	b = orderedTime(b, t.Window.Start)
	b, err := s.kc.Append(b, t.Key)
	must(err)
	s.buf = b
	return b
}

func must(err error) {
	if err != nil {
		panic(fmt.Errorf("weir: timers: %w", err))
	}
}

// decode reads a timer from its KV key.
func (s *KVService[K]) decode(key []byte) Timer[K] {
	b := key[3:]
	if len(b) < 24 {
		must(fmt.Errorf("corrupt timer key %x", key))
	}
	t := Timer[K]{TS: readTime(b), Window: window.Window{End: readTime(b[8:]), Start: readTime(b[16:])}}
	k, err := s.kc.Decode(b[24:])
	must(err)
	t.Key = k
	return t
}

// Register implements Timers.
func (s *KVService[K]) Register(t Timer[K]) {
	key := s.key(t)
	_, ok, err := s.kv.Get(key)
	must(err)
	if ok {
		return
	}
	must(s.kv.Set(key, nil))
	s.n++
	kg := s.kg(t.Key)
	if m, ok := s.mins[kg]; !ok || t.TS < m {
		s.mins[kg] = t.TS
	}
}

// Delete implements Timers.
func (s *KVService[K]) Delete(t Timer[K]) {
	key := s.key(t)
	_, ok, err := s.kv.Get(key)
	must(err)
	if !ok {
		return
	}
	must(s.kv.Delete(key))
	s.n--
	kg := s.kg(t.Key)
	if s.mins[kg] == t.TS {
		s.stale[kg] = true
	}
}

// refreshMin finds key group kg's smallest timestamp again, seeking from
// its lower bound.
func (s *KVService[K]) refreshMin(kg state.KeyGroup) {
	delete(s.stale, kg)
	start := orderedTime(s.prefix(nil, kg), s.mins[kg])
	end := append(state.AppendKeyGroup(nil, kg), s.tag+1)
	found := false
	must(s.kv.Scan(start, end, func(k, _ []byte) bool {
		s.mins[kg] = readTime(k[3:])
		found = true
		return false
	}))
	if !found {
		delete(s.mins, kg)
	}
}

// Has implements Timers.
func (s *KVService[K]) Has(t Timer[K]) bool {
	_, ok, err := s.kv.Get(s.key(t))
	must(err)
	return ok
}

// Len implements Timers.
func (s *KVService[K]) Len() int { return s.n }

// Next implements Timers.
func (s *KVService[K]) Next() (etime.Time, bool) {
	for kg := range s.stale {
		s.refreshMin(kg)
	}
	first, ok := etime.MaxTime, false
	for _, m := range s.mins {
		if !ok || m < first {
			first, ok = m, true
		}
	}
	return first, ok
}

// PopDue implements Timers: the timers with the smallest timestamp, from
// every key group that has them, in W5 order. They stay registered until
// Fired.
func (s *KVService[K]) PopDue(upTo etime.Time) []Timer[K] {
	ts, ok := s.Next()
	if !ok || ts > upTo {
		return nil
	}
	s.due = s.due[:0]
	for kg, m := range s.mins {
		if m != ts {
			continue
		}
		start := orderedTime(s.prefix(nil, kg), ts)
		end := orderedTime(s.prefix(nil, kg), ts+1)
		if ts == etime.MaxTime {
			end = append(state.AppendKeyGroup(nil, kg), s.tag+1)
		}
		must(s.kv.Scan(start, end, func(k, _ []byte) bool {
			s.due = append(s.due, s.decode(k))
			return true
		}))
	}
	if len(s.due) > 1 {
		s.due = s.order.sort(s.due, s.enc)
	}
	return s.due
}

// Fired implements Timers.
func (s *KVService[K]) Fired(t Timer[K]) { s.Delete(t) }

// Range implements Timers, in key-group order.
func (s *KVService[K]) Range(fn func(t Timer[K]) bool) {
	for kg := range s.mins {
		start := s.prefix(nil, kg)
		end := append(state.AppendKeyGroup(nil, kg), s.tag+1)
		stop := false
		must(s.kv.Scan(start, end, func(k, _ []byte) bool {
			stop = !fn(s.decode(k))
			return !stop
		}))
		if stop {
			return
		}
	}
}
