package sqlparse

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestParse runs testdata/*.txt: "parse" gives the formatted script (one
// statement per line) or the error with its position, offending text and
// hint. Every script that parses formats to text that parses to the same
// tree.
func TestParse(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "parse":
				s, err := Parse(d.Input)
				if err != nil {
					var pe *Error
					if !errors.As(err, &pe) {
						t.Fatalf("not an *Error: %T %v", err, err)
					}
					return "error: " + err.Error() + "\n" + pe.Excerpt(d.Input)
				}
				out := Format(s)
				roundTrip(t, s)
				return out
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// roundTrip checks that s formats to text that parses to s again,
// positions and quoting aside (which are not part of a tree's meaning).
// It clears them in s.
func roundTrip(t *testing.T, s *Script) {
	t.Helper()
	text := Format(s)
	again, err := Parse(text)
	if err != nil {
		t.Fatalf("the formatted script does not parse: %v\n%s", err, text)
	}
	clearPos(reflect.ValueOf(s))
	clearPos(reflect.ValueOf(again))
	if !reflect.DeepEqual(s, again) {
		t.Fatalf("the formatted script parses to another tree:\n%s\nformats as\n%s", text, Format(again))
	}
}

// clearPos zeroes every Pos and Quoted field reachable from v.
func clearPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			clearPos(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			clearPos(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Pos]() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Name == "Quoted" {
				f.SetBool(false)
				continue
			}
			clearPos(f)
		}
	}
}

// FuzzParse: the parser never panics, and whatever parses formats to text
// that parses to the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT a, b + 1 AS c FROM t WHERE x BETWEEN 1 AND 2",
		"CREATE TABLE t (a BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'kafka')",
		"INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end",
		"SET 'pipeline.name' = 'x'; EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM b; END;",
		"SELECT CASE WHEN a IS NULL THEN 'x' ELSE CAST(a AS STRING) END, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) FROM t",
		"SELECT `select`, 'it''s' FROM `my table` /*+ OPTIONS('a'='b') */",
		"SELECT COUNT(*) FILTER (WHERE a > 1), SUM(b) FILTER (WHERE c IN ('x', 'y')) AS s, filter FROM t",
		"SELECT LEFT(k, 2), RIGHT(k, 1), POSITION(a IN k), IFNULL(k, 1) FROM t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("not an *Error: %T %v", err, err)
			}
			return
		}
		roundTrip(t, s)
	})
}

// TestParseExpr: one expression, whole, or an error at its place.
func TestParseExpr(t *testing.T) {
	x, err := ParseExpr("amount > 10 AND region IN ('eu', 'us') OR NOT flag IS NULL")
	if err != nil || FormatExpr(x) != "((amount > 10) AND (region IN ('eu', 'us'))) OR (NOT (flag IS NULL))" {
		t.Errorf("got %v, %v", x, err)
	}
	if _, err := ParseExpr("amount > 10 region"); err == nil || !strings.Contains(err.Error(), "1:13: expected the end of the expression") {
		t.Errorf("got %v", err)
	}
	if _, err := ParseExpr("amount >"); err == nil {
		t.Error("a half expression parsed")
	}
}
