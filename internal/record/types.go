package record

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/spec"
)

// typedField is a field of a SQL type (source.types) at index at of the
// fields, or (path set) a field of the object there, by path.
type typedField struct {
	at   int
	path []string
	spec.TypedField
	kind   typeKind // the Type, decided once
	lo, hi int64    // an integer type's range
}

// typeKind is what a typedField reads its values into.
type typeKind uint8

const (
	kindInteger typeKind = iota // bigint, int, smallint, tinyint
	kindBoolean
	kindString
	kindFloat // double, float
)

func newTypedField(at int, path []string, f spec.TypedField) typedField {
	t := typedField{at: at, path: path, TypedField: f, lo: math.MinInt64, hi: math.MaxInt64}
	switch f.Type {
	case "int":
		t.lo, t.hi = math.MinInt32, math.MaxInt32
	case "smallint":
		t.lo, t.hi = math.MinInt16, math.MaxInt16
	case "tinyint":
		t.lo, t.hi = math.MinInt8, math.MaxInt8
	case "boolean":
		t.kind = kindBoolean
	case "string":
		t.kind = kindString
	case "double", "float":
		t.kind = kindFloat
	}
	return t
}

// locate returns the field's value and, for a nested field, the object
// that holds it (nil: the value is sc.got[at]); ok is false when a
// nested field's object is missing.
func locate(sc *scratch, at int, path []string) (v *fastjson.Value, parent *fastjson.Object, ok bool) {
	v = sc.got[at]
	if len(path) == 0 {
		return v, nil, true
	}
	for _, k := range path[:len(path)-1] {
		if v == nil {
			break
		}
		v = v.Get(k)
	}
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil, nil, false
	}
	o, _ := v.Object()
	return o.Get(path[len(path)-1]), o, true
}

// read replaces the field's value in sc.got (or its object) by its
// value in the field's type, as Flink's JSON format reads it
// (JsonToRowDataConverters): an integer from a number (cut toward zero)
// or from a string that holds one; a boolean true from true or text
// that is "true" in any case, else false; a string from a string, or
// any other value's compact text; a double from a number or from a string that
// holds one. A value the type cannot hold is an error.
func (f typedField) read(sc *scratch) error {
	v, parent, ok := locate(sc, f.at, f.path)
	if !ok || v == nil || v.Type() == fastjson.TypeNull {
		return nil
	}
	var n *fastjson.Value
	switch f.kind {
	case kindInteger:
		if v.Type() == fastjson.TypeNumber {
			// An integer in range, as it is (the common case, one parse).
			if i, err := v.Int64(); err == nil && i >= f.lo && i <= f.hi {
				return nil
			}
		}
		i, err := f.integer(v)
		if err != nil {
			return err
		}
		n = sc.arena.NewNumberString(strconv.FormatInt(i, 10))
	case kindBoolean:
		switch v.Type() {
		case fastjson.TypeTrue, fastjson.TypeFalse:
			return nil
		case fastjson.TypeString:
			n = sc.arena.NewFalse()
			if strings.EqualFold(string(bytes.TrimSpace(v.GetStringBytes())), "true") {
				n = sc.arena.NewTrue()
			}
		default:
			n = sc.arena.NewFalse() // a number's or an object's text is never "true"
		}
	case kindString:
		switch v.Type() {
		case fastjson.TypeString:
			return nil
		default:
			// Its compact JSON text, an object's members in their order,
			// as Flink's JSON format reads a STRING column (the node's
			// text): {"b":1,"a":2} and {"a":2,"b":1} are two strings.
			n = sc.arena.NewStringBytes(v.MarshalTo(sc.num[:0]))
		}
	case kindFloat:
		x, err := f.float(v)
		if err != nil {
			return err
		}
		if v.Type() == fastjson.TypeNumber {
			return nil // as it is (canonical text makes 3 and 3.0 one)
		}
		n = sc.arena.NewNumberString(string(strconv.AppendFloat(sc.num[:0], x, 'g', -1, 64)))
	}
	if parent != nil {
		parent.Set(f.path[len(f.path)-1], n)
		return nil
	}
	sc.got[f.at] = n
	return nil
}

// isIntText reports whether number v is written as an integer (no
// fraction or exponent).
func isIntText(v *fastjson.Value) bool {
	var b [32]byte
	t := v.MarshalTo(b[:0])
	return !bytes.ContainsAny(t, ".eE")
}

// integer is v as f's integer type.
func (f typedField) integer(v *fastjson.Value) (int64, error) {
	var i int64
	switch v.Type() {
	case fastjson.TypeNumber:
		if isIntText(v) {
			var b [32]byte
			n, err := strconv.ParseInt(string(v.MarshalTo(b[:0])), 10, 64)
			if err != nil {
				return 0, bad("value_out_of_range", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
			}
			i = n
			break
		}
		// A fraction or an exponent: Jackson's asLong/asInt cut it
		// toward zero (SMALLINT and TINYINT parse the text, refused).
		x := v.GetFloat64()
		if f.Type == "smallint" || f.Type == "tinyint" {
			return 0, bad("value_not_number", "field %q is a %s, got %s: not an integer", f.Field, strings.ToUpper(f.Type), short(v))
		}
		if math.IsNaN(x) || x < float64(f.lo) || x >= -float64(f.lo) {
			return 0, bad("value_out_of_range", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
		}
		i = int64(x)
	case fastjson.TypeString:
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v.GetStringBytes())), 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, bad("value_out_of_range", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
			}
			return 0, bad("value_not_number", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
		}
		i = n
	default:
		return 0, bad("value_not_number", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
	}
	if i < f.lo || i > f.hi {
		return 0, bad("value_out_of_range", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
	}
	return i, nil
}

// float is v as a double.
func (f typedField) float(v *fastjson.Value) (float64, error) {
	var x float64
	switch v.Type() {
	case fastjson.TypeNumber:
		x = v.GetFloat64()
	case fastjson.TypeString:
		var err error
		x, err = strconv.ParseFloat(string(bytes.TrimSpace(v.GetStringBytes())), 64)
		if err != nil && !errorIsRange(err) {
			return 0, bad("value_not_number", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
		}
	default:
		return 0, bad("value_not_number", "field %q is a %s, got %s", f.Field, strings.ToUpper(f.Type), short(v))
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, bad("value_out_of_range", "field %q is a %s, got %s: beyond what JSON holds", f.Field, strings.ToUpper(f.Type), short(v))
	}
	return x, nil
}

func errorIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
