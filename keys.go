package weir

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/state"
)

// Keyed is a stream partitioned by key: records with the same key go to the
// same subtask (through key groups, so state can be rescaled later).
type Keyed[K comparable, T any] struct {
	s   Stream[T]
	key func(T) K
	enc func(dst []byte, k K) []byte
}

// KeyBy partitions s by key. Keys order timers that fire at the same time
// by their canonical encoding (W5): the JSON array of the key values; use
// KeyByEncoded to supply it for composite key types.
func KeyBy[K comparable, T any](s Stream[T], key func(T) K) Keyed[K, T] {
	return Keyed[K, T]{s: s, key: key, enc: DefaultKeyEncoder[K]()}
}

// KeyByEncoded is KeyBy with an explicit canonical key encoding.
func KeyByEncoded[K comparable, T any](s Stream[T], key func(T) K, enc func(dst []byte, k K) []byte) Keyed[K, T] {
	return Keyed[K, T]{s: s, key: key, enc: enc}
}

// DefaultKeyEncoder returns the canonical encoding of a single key value:
// the JSON array holding it, such as ["a"] or [42].
func DefaultKeyEncoder[K comparable]() func(dst []byte, k K) []byte {
	// Strings and integers, named or not, are read by their kind: boxing
	// an integer in an interface allocates, and JSON-encoding a named one
	// is slower still. (K's kind is its memory layout, so the casts hold.)
	var value func(dst []byte, k K) []byte
	t := reflect.TypeFor[K]()
	kind := t.Kind()
	for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			kind = reflect.Invalid // its own JSON, as json.Marshal writes it
		}
	}
	switch kind {
	case reflect.String:
		value = func(dst []byte, k K) []byte { return AppendJSONString(dst, *(*string)(unsafe.Pointer(&k))) }
	case reflect.Int:
		value = func(dst []byte, k K) []byte { return strconv.AppendInt(dst, int64(*(*int)(unsafe.Pointer(&k))), 10) }
	case reflect.Int8:
		value = func(dst []byte, k K) []byte { return strconv.AppendInt(dst, int64(*(*int8)(unsafe.Pointer(&k))), 10) }
	case reflect.Int16:
		value = func(dst []byte, k K) []byte { return strconv.AppendInt(dst, int64(*(*int16)(unsafe.Pointer(&k))), 10) }
	case reflect.Int32:
		value = func(dst []byte, k K) []byte { return strconv.AppendInt(dst, int64(*(*int32)(unsafe.Pointer(&k))), 10) }
	case reflect.Int64:
		value = func(dst []byte, k K) []byte { return strconv.AppendInt(dst, *(*int64)(unsafe.Pointer(&k)), 10) }
	case reflect.Uint:
		value = func(dst []byte, k K) []byte { return strconv.AppendUint(dst, uint64(*(*uint)(unsafe.Pointer(&k))), 10) }
	case reflect.Uint8:
		value = func(dst []byte, k K) []byte {
			return strconv.AppendUint(dst, uint64(*(*uint8)(unsafe.Pointer(&k))), 10)
		}
	case reflect.Uint16:
		value = func(dst []byte, k K) []byte {
			return strconv.AppendUint(dst, uint64(*(*uint16)(unsafe.Pointer(&k))), 10)
		}
	case reflect.Uint32:
		value = func(dst []byte, k K) []byte {
			return strconv.AppendUint(dst, uint64(*(*uint32)(unsafe.Pointer(&k))), 10)
		}
	case reflect.Uint64:
		value = func(dst []byte, k K) []byte { return strconv.AppendUint(dst, *(*uint64)(unsafe.Pointer(&k)), 10) }
	case reflect.Uintptr:
		value = func(dst []byte, k K) []byte {
			return strconv.AppendUint(dst, uint64(*(*uintptr)(unsafe.Pointer(&k))), 10)
		}
	default:
		value = func(dst []byte, k K) []byte {
			b, err := json.Marshal(k)
			if err != nil {
				return AppendJSONString(dst, fmt.Sprint(k))
			}
			return append(dst, b...)
		}
	}
	return func(dst []byte, k K) []byte {
		dst = append(dst, '[')
		dst = value(dst, k)
		return append(dst, ']')
	}
}

// AppendJSONString appends s as a JSON string, as encoding/json writes it
// without HTML escaping: quote, backslash and control characters escaped,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD, everything
// else as raw UTF-8 bytes.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// kv is a keyed record on an exchange: the key travels with the value so
// it is computed once.
type kv[K comparable, T any] struct {
	k K
	h uint64 // stable hash of k
	v T
}

// keyedEdge connects k's stage to gate g of stage to, partitioning by key
// group, and returns the edge. The key and its stable hash are computed
// once, upstream, and travel with the record.
func keyedEdge[K comparable, T any](k Keyed[K, T], to *runtime.Stage, g int) *runtime.Edge[kv[K, T]] {
	maxPar := k.s.n.env.opts.MaxParallelism
	edge := runtime.Connect[kv[K, T]](k.s.n.stage, to, g, func(r kv[K, T], n int) int {
		return state.SubtaskOf(state.KeyGroupOf(r.h, maxPar), maxPar, n)
	})
	k.s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := edge.Writer(st)
		return &keyOp[K, T]{forward: forward{down}, key: k.key, down: down, h: state.NewHasher(k.enc), st: st}
	})
	return edge
}

type keyOp[K comparable, T any] struct {
	forward
	key  func(T) K
	down runtime.Collector[kv[K, T]]
	h    *state.Hasher[K]
	st   *runtime.Subtask
}

func (o *keyOp[K, T]) Collect(ts etime.Time, v T) {
	k := o.key(v)
	if k != k {
		// A key that is not equal to itself (a NaN) could never be found
		// in state again: refuse it as bad input.
		o.st.DeadLetter(runtime.DeadLetter{Reason: "key_invalid", Detail: "the key is not equal to itself (NaN)", Record: v})
		return
	}
	o.down.Collect(ts, kv[K, T]{k: k, h: o.h.Hash(k), v: v})
}
