package sqljob

import (
	"testing"

	"github.com/weirstream/weir/internal/sqlparse"
)

// TestDecimalTypes: the result types of arithmetic on decimals are
// Flink's (LogicalTypeMerging), including the scale a precision beyond
// 38 gives up.
func TestDecimalTypes(t *testing.T) {
	dec := func(p, s int) numType { return numType{kind: tDec, p: p, s: s} }
	for _, c := range []struct {
		op   string
		a, b numType
		want numType
	}{
		{"/", dec(32, 8), dec(38, 8), dec(38, 6)},
		{"/", dec(30, 20), dec(30, 20), dec(38, 8)},
		{"/", dec(10, 2), numType{kind: tInt, p: 10}, dec(21, 13)},
		{"*", dec(30, 10), dec(30, 10), dec(38, 6)},
		{"*", dec(30, 20), dec(30, 20), dec(38, 17)},
		{"*", dec(38, 2), dec(38, 3), dec(38, 5)},
		{"*", dec(10, 2), numType{kind: tInt, p: 10}, dec(21, 2)},
		{"%", dec(30, 10), dec(30, 10), dec(30, 10)},
		{"%", dec(30, 20), dec(25, 20), dec(25, 20)},
		{"%", dec(10, 10), dec(10, 10), dec(10, 10)},
		{"%", numType{kind: tInt, p: 19}, numType{kind: tInt, p: 10}, numType{kind: tInt, p: 19}},
		{"+", dec(30, 10), dec(30, 10), dec(31, 10)},
		{"+", dec(30, 20), dec(30, 20), dec(31, 20)},
		{"+", dec(38, 10), dec(38, 20), dec(38, 9)},
		{"-", dec(38, 0), dec(38, 0), dec(38, 0)},
		{"+", dec(10, 2), numType{kind: tFloat}, numType{kind: tFloat}},
		{"+", dec(10, 2), numType{}, numType{}},
	} {
		if got := arithType(c.op, c.a, c.b); got != c.want {
			t.Errorf("%+v %s %+v = %+v, want %+v", c.a, c.op, c.b, got, c.want)
		}
	}
	fields := map[string]numType{"price": dec(10, 2), "qty": {kind: tInt, p: 10}, "n": {kind: tInt, p: 19}}
	field := func(parts []sqlparse.Ident) numType {
		if len(parts) == 2 && parts[0].Name == "meta" && parts[1].Name == "fee" {
			return dec(5, 2)
		}
		return fields[parts[0].Name]
	}
	for src, want := range map[string]string{
		"price * 3":                           "CAST(price * 3 AS DECIMAL(21, 2))",
		"price * 1.50":                        "CAST(price * 1.50 AS DECIMAL(14, 4))",
		"price / n":                           "CAST(price / n AS DECIMAL(30, 22))",
		"(price / qty) * 2":                   "CAST(CAST(price / qty AS DECIMAL(21, 13)) * 2 AS DECIMAL(32, 13))",
		"CAST(price / qty AS DECIMAL(10, 4))": "CAST(CAST(price / qty AS DECIMAL(21, 13)) AS DECIMAL(10, 4))",
		"meta.fee / 3":                        "CAST(meta.fee / 3 AS DECIMAL(16, 13))",
		"price / 0.5":                         "CAST(price / 0.5 AS DECIMAL(15, 6))",
		"CASE WHEN qty > 1 THEN price ELSE 0 END": "CAST(CASE WHEN qty > 1 THEN price ELSE 0 END AS DECIMAL(12, 2))",
		"ROUND(price, 1)":                         "CAST(ROUND(price, 1) AS DECIMAL(10, 1))",
		"qty / 2":                                 "qty / 2",
		"price * 2e0":                             "price * CAST(2e0 AS DOUBLE)",
		"price > 1 AND price / qty < 0.5":         "(price > 1) AND (CAST(price / qty AS DECIMAL(21, 13)) < 0.5)",
		"price":                                   "CAST(price AS DECIMAL(10, 2))",
	} {
		x, err := sqlparse.ParseExpr(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := sqlparse.FormatExpr(flinkCasts(x, field)); got != want {
			t.Errorf("%s: %s, want %s", src, got, want)
		}
	}
}
