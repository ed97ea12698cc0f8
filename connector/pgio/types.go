package pgio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/connector"
)

// Type is the SQL type of a key or value column of a result table, and so
// how Write stores the JSON value it is given for the column
// (connector.ColumnType). The zero Type is JSONB.
//
// Every type but JSONB stores a JSON null as SQL NULL; since key columns
// are NOT NULL, Write refuses a null key for them. Each refuses, as Write
// errors naming the column, a value it cannot hold exactly as the type
// says (a string in a numeric column, 1.5 in a bigint one), so that a
// table never holds a value other than the one written.
type Type = connector.ColumnType

const (
	// JSONB stores the JSON value as jsonb: a JSON null is the jsonb
	// null, not SQL NULL, so a null key is a key like any other. jsonb
	// values compare as jsonb: the string "1" and the number 1 differ,
	// the numbers 1 and 1.0 are equal, as are two objects with the same
	// members in another order (the table keeps the spelling inserted
	// first). Whitespace is not kept.
	JSONB = connector.JSONB
	// Text stores a JSON string as its text ("user-001" is user-001,
	// escapes decoded), and any other value as its JSON text without
	// whitespace (7 is 7, true is true, an object its compact JSON with
	// its members in the order written). So a string and another value
	// of the same text are the same text: in a key column the string "7"
	// and the number 7 are one key (the sink warns, once per column,
	// when a column gets both strings and other values).
	Text = connector.Text
	// BigInt stores a JSON integer (no fraction, no exponent) within
	// int64.
	BigInt = connector.BigInt
	// Double stores a JSON number as double precision, rounded to the
	// nearest float64 (a number beyond float64's range is refused).
	Double = connector.Double
	// Numeric stores a JSON number exactly as numeric (every digit, 1.50
	// with its scale).
	Numeric = connector.Numeric
)

// ColumnDef is a key or value column of a result table: its name and type
// (connector.ColumnDef).
type ColumnDef = connector.ColumnDef

// Defs returns a ColumnDef of type t for each name.
func Defs(t Type, names ...string) []ColumnDef {
	d := make([]ColumnDef, len(names))
	for i, n := range names {
		d[i] = ColumnDef{Name: n, Type: t}
	}
	return d
}

// nullText stands for SQL NULL among a Sink's column texts. No column text
// can be it: checkJSON refuses a NUL byte in a string (\u0000), and JSON
// has no raw NUL bytes.
const nullText = "\x00"

// Arg converts a JSON value to the query argument a Sink binds for it in a
// column of type t: nil for SQL NULL, otherwise the column's text (bound
// as $n::type). Programs that look rows up or write them beside a Sink (a
// backfill) use it, so that they compare and store exactly as the sink
// does. key says whether the column is a key column (see Type).
func Arg(t Type, v []byte, key bool) (any, error) {
	b, null, err := appendValue(nil, t, v, key)
	if err != nil || null {
		return nil, err
	}
	return string(b), nil
}

// appendValue appends the text of JSON value v as a column of type t
// stores it to dst, or reports that it is SQL NULL (appending nothing).
// The errors name neither the column nor the row; Write adds them.
func appendValue(dst []byte, t Type, v []byte, key bool) (_ []byte, null bool, err error) {
	if err := checkJSON(v); err != nil {
		return dst, false, err
	}
	if t == JSONB {
		return append(dst, v...), false, nil
	}
	v = trimSpace(v)
	switch v[0] {
	case 'n': // null
		if key {
			return dst, false, fmt.Errorf("null is not a key a %s column can hold (key columns are NOT NULL)", t)
		}
		return dst, true, nil
	case '"':
		if t == Text {
			return appendUnquoted(dst, v)
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		switch t {
		case Text, Numeric:
			return append(dst, v...), false, nil
		case BigInt:
			if !isInt64(v) {
				return dst, false, fmt.Errorf("%s is not an integer within int64, as a bigint column holds", clip(v))
			}
			return append(dst, v...), false, nil
		case Double:
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return dst, false, fmt.Errorf("%s is beyond the range of double precision", clip(v))
			}
			// The shortest text of the float64: Postgres reads it back
			// as the same float64 (it refuses the text of a number that
			// underflows to 0, such as 1e-400).
			return strconv.AppendFloat(dst, f, 'g', -1, 64), false, nil
		}
	case '[', '{':
		if t == Text {
			// (v is valid JSON: Compact only drops its spaces.)
			b := bytes.NewBuffer(dst)
			if err := json.Compact(b, v); err != nil {
				return dst, false, fmt.Errorf("%s: %w", clip(v), err)
			}
			return b.Bytes(), false, nil
		}
	default: // true, false
		if t == Text {
			return append(dst, v...), false, nil
		}
	}
	return dst, false, fmt.Errorf("%s is not a number, as a %s column holds", clip(v), t)
}

// isInt64 reports whether the valid JSON number b is an integer written
// without a fraction or an exponent that fits in an int64.
func isInt64(b []byte) bool {
	digits := b
	limit := "9223372036854775807"
	if b[0] == '-' {
		digits, limit = b[1:], "9223372036854775808"
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(digits) < len(limit) || len(digits) == len(limit) && string(digits) <= limit
}

// appendUnquoted appends the text of the valid JSON string b (checkJSON
// has refused \u0000 and unpaired surrogates).
func appendUnquoted(dst, b []byte) ([]byte, bool, error) {
	inner := b[1 : len(b)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return append(dst, inner...), false, nil
	}
	var s string // escapes: rare in keys, decoded the standard way
	if err := json.Unmarshal(b, &s); err != nil {
		return dst, false, invalidJSON(b, err)
	}
	return append(dst, s...), false, nil
}
