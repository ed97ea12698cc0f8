package winop

import (
	"reflect"
	"testing"
)

// TestCountersFields: fields lists every counter once, so Add and
// snapshots cannot skip one, and the snapshot's fixed layout is a prefix
// of it.
func TestCountersFields(t *testing.T) {
	var c Counters
	v := reflect.ValueOf(&c).Elem()
	fs := c.fields()
	if len(fs) != v.NumField() {
		t.Fatalf("fields lists %d counters, Counters has %d", len(fs), v.NumField())
	}
	seen := map[*int64]bool{}
	for i := range v.NumField() {
		seen[v.Field(i).Addr().Interface().(*int64)] = true
	}
	for i, f := range fs {
		if !seen[f] {
			t.Fatalf("field %d is not a distinct counter of c", i)
		}
		delete(seen, f)
	}
	if fixedCounters > len(fs) {
		t.Fatalf("fixedCounters %d > %d counters", fixedCounters, len(fs))
	}

	// Add adds every counter.
	var a, b Counters
	bv := reflect.ValueOf(&b).Elem()
	for i := range bv.NumField() {
		bv.Field(i).SetInt(int64(i + 1))
		reflect.ValueOf(&a).Elem().Field(i).SetInt(100)
	}
	a.Add(b)
	av := reflect.ValueOf(a)
	for i := range av.NumField() {
		if got, want := av.Field(i).Int(), int64(100+i+1); got != want {
			t.Fatalf("after Add, %s = %d, want %d", av.Type().Field(i).Name, got, want)
		}
	}
}
