package watermark

import (
	"encoding/binary"
	"errors"

	"github.com/weirstream/weir/etime"
)

// Stateful is implemented by generators and outputs whose state must
// survive a restore, so that no record is judged late differently after a
// crash (R13): the largest timestamp seen, the last watermark forwarded,
// the idle status. Processing-time state (when a channel was last active)
// is not kept: after a restore the idleness and heartbeat clocks start
// again, which only delays them.
type Stateful interface {
	// AppendState appends the state to dst.
	AppendState(dst []byte) []byte
	// RestoreState replaces the state with one AppendState wrote.
	RestoreState(b []byte) error
}

var errState = errors.New("watermark: corrupt state")

func appendTime(dst []byte, t etime.Time) []byte { return binary.AppendVarint(dst, int64(t)) }

func readTime(b []byte) (etime.Time, []byte, error) {
	v, k := binary.Varint(b)
	if k <= 0 {
		return 0, nil, errState
	}
	return etime.Time(v), b[k:], nil
}

// AppendState implements Stateful: the largest timestamp seen.
func (g *boundedOutOfOrderness[T]) AppendState(dst []byte) []byte { return appendTime(dst, g.maxTs) }

// RestoreState implements Stateful.
func (g *boundedOutOfOrderness[T]) RestoreState(b []byte) error {
	t, _, err := readTime(b)
	if err == nil {
		g.maxTs = t
	}
	return err
}

// AppendState implements Stateful: the last watermark forwarded and the
// idle status.
func (s *SourceOutput) AppendState(dst []byte) []byte {
	dst = appendTime(dst, s.last)
	if s.idle {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// RestoreState implements Stateful. It forwards nothing: downstream
// valves restore their own state.
func (s *SourceOutput) RestoreState(b []byte) error {
	t, rest, err := readTime(b)
	if err != nil || len(rest) != 1 {
		return errState
	}
	s.last, s.idle = t, rest[0] == 1
	return nil
}

// AppendState implements Stateful: the inner generator's state.
func (g *withIdleness[T]) AppendState(dst []byte) []byte { return AppendState(dst, g.inner) }

// RestoreState implements Stateful.
func (g *withIdleness[T]) RestoreState(b []byte) error { return RestoreState(g.inner, b) }

// AppendState implements Stateful: the inner generator's state and the
// highest watermark forwarded.
func (h *withHeartbeat[T]) AppendState(dst []byte) []byte {
	dst = appendTime(appendTime(dst, h.innerWm), h.high)
	return AppendState(dst, h.inner)
}

// RestoreState implements Stateful.
func (h *withHeartbeat[T]) RestoreState(b []byte) error {
	var err error
	if h.innerWm, b, err = readTime(b); err != nil {
		return err
	}
	if h.high, b, err = readTime(b); err != nil {
		return err
	}
	return RestoreState(h.inner, b)
}

// AppendState appends v's state when it is Stateful (nothing otherwise:
// punctuated generators keep no state).
func AppendState(dst []byte, v any) []byte {
	if s, ok := v.(Stateful); ok {
		return s.AppendState(dst)
	}
	return dst
}

// RestoreState restores v's state when it is Stateful.
func RestoreState(v any, b []byte) error {
	if s, ok := v.(Stateful); ok {
		return s.RestoreState(b)
	}
	return nil
}
