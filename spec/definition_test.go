package spec

import (
	"reflect"
	"testing"
)

// TestFieldsClassified: every field of the spec's schema has a class of
// its own or of a section listed in stateFields (so that a new field is
// classified on purpose, not by the default), and every entry of
// stateFields names a field or section of the schema.
func TestFieldsClassified(t *testing.T) {
	seen := map[string]bool{}
	var walk func(tp reflect.Type, path string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice {
			tp = tp.Elem()
		}
		if path != "" {
			seen[normalPath(path)] = true
		}
		if _, whole := stateFields[normalPath(path)]; whole {
			return // a section classified whole, such as trigger, which nests
		}
		if tp.Kind() != reflect.Struct {
			if _, rule := FieldClass(path); rule == "" {
				t.Errorf("%s has no class in stateFields", path)
			}
			return
		}
		for i := range tp.NumField() {
			sf := tp.Field(i)
			if name := fieldName(sf); name != "-" {
				p := name
				if path != "" {
					p = path + "." + name
				}
				walk(sf.Type, p)
			}
		}
	}
	walk(reflect.TypeFor[Spec](), "")
	for k := range stateFields {
		if !seen[k] {
			t.Errorf("stateFields lists %s, which is no field of the spec", k)
		}
	}
	for path, want := range map[string]bool{"sinks.results.url": false, "sinks.late.path": true, "aggregate[3].fn": true,
		"source.kafka.sasl.password": false, "source.kafka.topic": true, "sinks.results.sasl.user": false, "window.size": true, "sinks.results.capacity": false} {
		if got, _ := FieldClass(path); got != want {
			t.Errorf("%s: state-relevant %v, want %v", path, got, want)
		}
	}
}
