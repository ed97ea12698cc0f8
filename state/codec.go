package state

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// Codec encodes values of T for checkpoints and on-disk state. Append adds
// v's encoding to dst; Decode reads exactly one encoding (the caller frames
// values). Codecs are safe for concurrent use.
type Codec[T any] interface {
	Append(dst []byte, v T) ([]byte, error)
	Decode(src []byte) (T, error)
}

// CodecFor returns the codec of T: a direct encoding for strings, booleans,
// integers and floats; the type's own MarshalBinary/UnmarshalBinary when T
// (or, for a pointer type *X, *X) implements them; encoding/gob otherwise,
// which needs exported fields (a type that gob cannot encode fails at the
// first checkpoint with an error naming it; implement
// encoding.BinaryMarshaler to fix it).
func CodecFor[T any]() Codec[T] {
	var z T
	switch any(z).(type) {
	case string:
		return funcCodec[T]{
			app: func(dst []byte, v T) []byte { return append(dst, any(v).(string)...) },
			dec: func(src []byte) (T, error) { return any(string(src)).(T), nil },
		}
	case bool:
		return funcCodec[T]{
			app: func(dst []byte, v T) []byte {
				if any(v).(bool) {
					return append(dst, 1)
				}
				return append(dst, 0)
			},
			dec: func(src []byte) (T, error) { return any(len(src) == 1 && src[0] == 1).(T), nil },
		}
	case float64:
		return funcCodec[T]{
			app: func(dst []byte, v T) []byte {
				return binary.BigEndian.AppendUint64(dst, math.Float64bits(any(v).(float64)))
			},
			dec: func(src []byte) (T, error) {
				if len(src) != 8 {
					return z, errShort
				}
				return any(math.Float64frombits(binary.BigEndian.Uint64(src))).(T), nil
			},
		}
	}
	t := reflect.TypeFor[T]()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return funcCodec[T]{
			app: func(dst []byte, v T) []byte { return binary.AppendVarint(dst, reflect.ValueOf(v).Int()) },
			dec: func(src []byte) (T, error) {
				n, k := binary.Varint(src)
				if k != len(src) {
					return z, errShort
				}
				var v T
				reflect.ValueOf(&v).Elem().SetInt(n)
				return v, nil
			},
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return funcCodec[T]{
			app: func(dst []byte, v T) []byte { return binary.AppendUvarint(dst, reflect.ValueOf(v).Uint()) },
			dec: func(src []byte) (T, error) {
				n, k := binary.Uvarint(src)
				if k != len(src) {
					return z, errShort
				}
				var v T
				reflect.ValueOf(&v).Elem().SetUint(n)
				return v, nil
			},
		}
	}
	if _, ok := any(z).(encoding.BinaryMarshaler); ok || reflect.PointerTo(t).Implements(binaryMarshaler) {
		if reflect.PointerTo(t).Implements(binaryUnmarshaler) || t.Kind() == reflect.Pointer && t.Implements(binaryUnmarshaler) {
			return binaryCodec[T]{t: t}
		}
	}
	return gobCodec[T]{}
}

var (
	binaryMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binaryUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	errShort          = errors.New("weir: state: truncated value")
)

type funcCodec[T any] struct {
	app func(dst []byte, v T) []byte
	dec func(src []byte) (T, error)
}

func (c funcCodec[T]) Append(dst []byte, v T) ([]byte, error) { return c.app(dst, v), nil }
func (c funcCodec[T]) Decode(src []byte) (T, error)           { return c.dec(src) }

// binaryCodec uses the type's MarshalBinary and UnmarshalBinary. For a
// pointer type *X, decoding allocates a new X.
type binaryCodec[T any] struct{ t reflect.Type }

func (c binaryCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	var m encoding.BinaryMarshaler
	if bm, ok := any(v).(encoding.BinaryMarshaler); ok {
		m = bm
	} else {
		m = any(&v).(encoding.BinaryMarshaler)
	}
	if a, ok := m.(encoding.BinaryAppender); ok {
		return a.AppendBinary(dst)
	}
	b, err := m.MarshalBinary()
	return append(dst, b...), err
}

func (c binaryCodec[T]) Decode(src []byte) (T, error) {
	var v T
	if c.t.Kind() == reflect.Pointer && c.t.Implements(binaryUnmarshaler) {
		p := reflect.New(c.t.Elem())
		reflect.ValueOf(&v).Elem().Set(p)
		return v, any(v).(encoding.BinaryUnmarshaler).UnmarshalBinary(src)
	}
	return v, any(&v).(encoding.BinaryUnmarshaler).UnmarshalBinary(src)
}

// gobCodec is the fallback: one self-describing gob stream per value.
type gobCodec[T any] struct{}

func (gobCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&v); err != nil {
		return dst, fmt.Errorf("weir: state of type %v cannot be checkpointed (%w); give it MarshalBinary and UnmarshalBinary methods", reflect.TypeFor[T](), err)
	}
	return append(dst, b.Bytes()...), nil
}

func (gobCodec[T]) Decode(src []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(src)).Decode(&v)
	return v, err
}

// Writer frames values into a snapshot: each Append writes a uvarint
// length and the bytes. It never fails; codecs' errors are returned by the
// calls that encode.
type Writer struct{ Buf []byte }

// Bytes appends one length-prefixed byte string.
func (w *Writer) Bytes(b []byte) {
	w.Buf = binary.AppendUvarint(w.Buf, uint64(len(b)))
	w.Buf = append(w.Buf, b...)
}

// Int appends a varint.
func (w *Writer) Int(v int64) { w.Buf = binary.AppendVarint(w.Buf, v) }

// Uint appends a uvarint.
func (w *Writer) Uint(v uint64) { w.Buf = binary.AppendUvarint(w.Buf, v) }

// WriteValue appends v's encoding by c, length-prefixed.
func WriteValue[T any](w *Writer, c Codec[T], v T) error {
	start := len(w.Buf)
	// Reserve one byte for the length, which is all a value shorter than
	// 128 bytes needs (most are); a longer one is moved to make room.
	w.Buf = append(w.Buf, 0)
	b, err := c.Append(w.Buf, v)
	if err != nil {
		w.Buf = w.Buf[:start]
		return err
	}
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		w.Buf = b
		return nil
	}
	var lenBuf [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(lenBuf[:], uint64(n))
	b = append(b, lenBuf[:k-1]...) // room for the longer length
	copy(b[start+k:], b[start+1:start+1+n])
	copy(b[start:], lenBuf[:k])
	w.Buf = b
	return nil
}

// Reader reads what a Writer wrote; the first error sticks and later reads
// return zero values.
type Reader struct {
	Buf []byte
	Err error
}

// Bytes reads one length-prefixed byte string (aliasing the buffer).
func (r *Reader) Bytes() []byte {
	if r.Err != nil {
		return nil
	}
	n, k := binary.Uvarint(r.Buf)
	if k <= 0 || uint64(len(r.Buf)-k) < n {
		r.Err = errShort
		return nil
	}
	b := r.Buf[k : k+int(n)]
	r.Buf = r.Buf[k+int(n):]
	return b
}

// Int reads a varint.
func (r *Reader) Int() int64 {
	if r.Err != nil {
		return 0
	}
	v, k := binary.Varint(r.Buf)
	if k <= 0 {
		r.Err = errShort
		return 0
	}
	r.Buf = r.Buf[k:]
	return v
}

// Uint reads a uvarint.
func (r *Reader) Uint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.Buf)
	if k <= 0 {
		r.Err = errShort
		return 0
	}
	r.Buf = r.Buf[k:]
	return v
}

// ReadValue reads one value encoded by c.
func ReadValue[T any](r *Reader, c Codec[T]) T {
	b := r.Bytes()
	var z T
	if r.Err != nil {
		return z
	}
	v, err := c.Decode(b)
	if err != nil {
		r.Err = err
		return z
	}
	return v
}
