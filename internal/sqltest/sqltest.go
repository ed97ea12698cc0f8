// Package sqltest reads SQL tables whole for tests that compare them.
package sqltest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// Dump runs each query on db and returns every row, one line each, in
// the queries' order: two dumps are equal when every value is. A query
// on a table that does not exist (yet) adds nothing.
func Dump(t testing.TB, db *sql.DB, queries ...string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range queries {
		rows, err := db.Query(q)
		if err != nil {
			if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "does not exist") {
				continue
			}
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}
