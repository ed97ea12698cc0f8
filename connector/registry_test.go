package connector

import (
	"errors"
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	sink := func(roles SinkRole, fields ...Field) *SinkKind { return &SinkKind{Roles: roles, Fields: fields} }
	f := Field{Name: "path", Doc: "the file"}
	for _, k := range []Kind{
		{Name: "a", Doc: "a", Source: &SourceKind{Fields: []Field{f}}},
		{Name: "b", Doc: "b", Sink: sink(RoleResults, f)},
		{Name: "c", Doc: "c", Source: &SourceKind{}, Sink: sink(AllRoles)},
		{Name: "d", Doc: "d", Sink: sink(RoleLate)},
	} {
		if err := r.Register(k); err != nil {
			t.Fatalf("Register(%s): %v", k.Name, err)
		}
	}
	for _, bad := range []Kind{
		{Name: "Bad", Doc: "x", Sink: sink(RoleLate)},
		{Name: "e", Doc: "x"},
		{Name: "e", Doc: "x", Sink: sink(0)},
		{Name: "e", Sink: sink(RoleLate)},
		{Name: "e", Doc: "x", Sink: sink(RoleLate, Field{Name: "p"})},
		{Name: "e", Doc: "x", Sink: sink(RoleLate, f, f)},
	} {
		if err := r.Register(bad); err == nil {
			t.Errorf("Register(%+v) accepted", bad)
		}
	}
	if err := r.Register(Kind{Name: "a", Doc: "again", Sink: sink(RoleLate)}); !errors.Is(err, ErrDuplicateKind) {
		t.Errorf("a second a: %v, want ErrDuplicateKind", err)
	}
	if got := r.Sources(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Sources = %v", got)
	}
	if got := r.Sinks(RoleLate); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("Sinks(late) = %v", got)
	}
	if got := r.Sinks(RoleResults); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("Sinks(results) = %v", got)
	}
	b, ok := r.Lookup("b")
	if !ok || !b.Takes(false, "path") || b.Takes(true, "path") {
		t.Errorf("Lookup(b) = %+v, %v", b, ok)
	}
	if got := (AbilityTransactional | AbilityUpsert).String(); got != "transactional, upsert" {
		t.Errorf("abilities %q", got)
	}
	if got := AllRoles.String(); got != "results, late, dead_letter" {
		t.Errorf("roles %q", got)
	}
}
