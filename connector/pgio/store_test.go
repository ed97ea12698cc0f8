package pgio

import "testing"

// TestRebind: the ? placeholders become $n, except in quoted names and
// strings.
func TestRebind(t *testing.T) {
	got := dialect{}.Rebind(`SELECT "vip?" FROM "t" WHERE a = ? AND 'x?' = ? AND "q""?" = ?`)
	want := `SELECT "vip?" FROM "t" WHERE a = $1 AND 'x?' = $2 AND "q""?" = $3`
	if got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}
