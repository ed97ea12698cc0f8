package record

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/spec"
)

// Seed builds an accumulator from a window's stored values: the
// aggregates as the SQLite driver gives them (count, sum, min and max are
// their own accumulators), then, if the job keeps them, the
// accumulators' text (see appendAccs).
func (a Aggregator) Seed(vals []any) (*Acc, error) {
	ac := a.CreateAccumulator()
	for i, fn := range a.Fns {
		if a.isString(i) {
			seedString(&ac.s[i], vals[i])
			continue
		}
		seedSlot(fn, &ac.s[i], vals[i], a.isFloat(i))
	}
	if a.withAcc {
		text, ok := vals[len(a.Fns)].(string)
		if !ok {
			return nil, fmt.Errorf("the row has no %s: it was written before weir kept accumulators; rerun the job into a new table", spec.AccColumn)
		}
		if err := a.seedAccs(ac, text); err != nil {
			return nil, err
		}
	}
	return ac, nil
}

// seedSlot sets count, sum, min or max from its stored value; float is
// the aggregate's type: float.
func seedSlot(fn string, s *slot, v any, float bool) {
	x, ok := numberVal(v, float)
	switch fn {
	case "count":
		if ok {
			s.n = x.i
		}
	case "sum", "min", "max":
		if !ok {
			return // null: no value yet
		}
		s.n = 1
		if fn == "sum" {
			switch x.kind {
			case vInt:
				s.i = x.i
			case vDec:
				s.isD, s.d = true, x.dec()
			default:
				s.isF, s.f, s.over = true, x.f, !float
			}
		} else {
			s.v = x
		}
	}
}

// seedString sets a min or max of strings from its stored text (nil:
// no value yet).
func seedString(s *slot, v any) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case []byte:
		text = string(x)
	case NumText: // a text that reads as a number is still the text
		text = string(x)
	default:
		return
	}
	s.n, s.v = 1, val{kind: vStr, raw: text}
}

// NumText is a stored JSON number as its text, for a store that keeps
// the text (the archive, Postgres jsonb), so that a decimal comes back
// exactly.
type NumText string

// numberVal turns a stored count, sum, min or max into a val: a float64
// (SQLite's REAL) of a decimal aggregate is the decimal it prints, the
// shortest that reads back as it (exact for the 15 digits REAL keeps),
// with at least one fraction digit: the sink stored a number with a
// fraction as REAL (100.00 as 100), and what is folded into it must stay
// REAL, not become an INTEGER.
func numberVal(v any, float bool) (val, bool) {
	switch x := v.(type) {
	case int64:
		return val{kind: vInt, i: x}, true
	case float64:
		if !float && isFinite(x) {
			var buf [32]byte
			if d, ok := parseDec(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)); ok {
				if d1, ok := d.rescale(max(d.scale, 1)); ok {
					return decVal(d1), true
				}
			}
		}
		return val{kind: vFloat, f: x}, true
	case NumText:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return val{kind: vInt, i: i}, true
		}
		if d, ok := parseDec([]byte(x)); ok && !float {
			return decVal(d), true
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return val{kind: vFloat, f: f}, true
		}
	}
	return val{}, false
}
