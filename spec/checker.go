package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
	"go.yaml.in/yaml/v3"
)

// checker is a connector.Checker over one source's or sink's settings
// (v, a struct of yaml-tagged fields) at field path path.
type checker struct {
	c    *compiler
	path string
	v    reflect.Value
}

// field is the named setting (dotted names walk nested structs, and the
// mappings of a kind's own settings); the zero Value when it, or a block
// on its way, is unset.
func (k checker) field(name string) reflect.Value {
	v := k.v
	for part := range strings.SplitSeq(name, ".") {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Map: // a block of a kind's own settings, as YAML gave it
			if v.Type().Key().Kind() != reflect.String {
				return reflect.Value{}
			}
			v = v.MapIndex(reflect.ValueOf(part).Convert(v.Type().Key()))
			if !v.IsValid() {
				return reflect.Value{}
			}
			continue
		case reflect.Struct:
		default:
			return reflect.Value{}
		}
		next := reflect.Value{}
		for i := range v.NumField() {
			if yamlName(v.Type().Field(i)) == part {
				next = v.Field(i)
				break
			}
		}
		if !next.IsValid() {
			// A setting of the kind alone (Source.Extra, Sink.Extra).
			x, ok := extrasOf(v)
			if !ok || x.get(part) == nil {
				return reflect.Value{}
			}
			next = reflect.ValueOf(x.get(part))
		}
		v = next
	}
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// yamlName is a struct field's name in a spec ("" or "-": none).
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func (k checker) at(field string) string {
	if field == "" {
		return k.path
	}
	return k.path + "." + field
}

func (k checker) String(field string) string {
	if v := k.field(field); v.IsValid() && v.Kind() == reflect.String {
		return v.String()
	}
	return ""
}

func (k checker) Strings(field string) []string {
	if v := k.field(field); v.IsValid() && v.Kind() == reflect.Slice {
		switch s := v.Interface().(type) {
		case []string:
			return s
		case []any: // Sink.Extra's
			out := make([]string, 0, len(s))
			for _, x := range s {
				if str, ok := x.(string); ok {
					out = append(out, str)
				}
			}
			return out
		}
	}
	return nil
}

func (k checker) Int(field string) int {
	switch v := k.field(field); {
	case !v.IsValid():
	case v.CanInt():
		return int(v.Int())
	case v.CanUint():
		return int(v.Uint())
	}
	return 0
}

func (k checker) Float(field string) float64 {
	v := k.field(field)
	switch {
	case !v.IsValid():
	case v.CanFloat():
		return v.Float()
	case v.CanInt():
		return float64(v.Int())
	}
	return 0
}

func (k checker) List(field string) []connector.Settings {
	v := k.field(field)
	if !v.IsValid() || v.Kind() != reflect.Slice {
		return nil
	}
	out := make([]connector.Settings, v.Len())
	for i := range out {
		out[i] = checker{c: k.c, path: fmt.Sprintf("%s[%d]", k.at(field), i), v: v.Index(i)}
	}
	return out
}

func (k checker) Bool(field string) bool {
	if v := k.field(field); v.IsValid() && v.Kind() == reflect.Bool {
		return v.Bool()
	}
	return false
}

func (k checker) Duration(field string) (time.Duration, bool) {
	v := k.field(field)
	if !v.IsValid() {
		return 0, false
	}
	switch x := v.Interface().(type) {
	case *Duration:
		if x != nil {
			return time.Duration(*x) * time.Millisecond, true
		}
	case string: // Sink.Extra's: 30s, 5m
		if d, err := ParseDuration(x); err == nil {
			return time.Duration(d) * time.Millisecond, true
		}
	case int: // Sink.Extra's: milliseconds, as a bare number elsewhere
		return time.Duration(x) * time.Millisecond, true
	}
	return 0, false
}

func (k checker) Set(field string) bool {
	v := k.field(field)
	return v.IsValid() && !v.IsZero()
}

func (k checker) Default(field, value string) {
	if v := k.field(field); v.IsValid() && v.Kind() == reflect.String && v.String() == "" && v.CanSet() {
		v.SetString(value)
		return
	}
	if x, ok := k.extra(field); ok && !strings.Contains(field, ".") && x.get(field) == nil {
		x.set(field, value, [2]int{})
	}
}

// extra is the extras of the source or sink whose settings k reads, when
// field is none of its spec fields (a setting of its kind alone).
func (k checker) extra(field string) (extras, bool) {
	v := k.v
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	x, ok := extrasOf(v)
	if !ok || !x.holds(field) {
		return extras{}, false
	}
	return x, true
}

// IsSinkField reports whether name is a field of the spec's Sink (a
// setting of the built-in kinds), not a kind's own (Sink.Extra).
func IsSinkField(name string) bool { return slices.Contains(sinkFields, name) }

// sinkFields and sourceFields are the YAML names of the spec's Sink and
// Source fields.
var sinkFields, sourceFields = fieldNames(reflect.TypeFor[Sink]()), fieldNames(reflect.TypeFor[Source]())

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if n := yamlName(t.Field(i)); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return names
}

func (k checker) Report(field, msg, fix string) { k.c.add(k.at(field), msg, fix) }

func (k checker) Positive(field, what string) {
	v := k.field(field)
	if !v.IsValid() {
		return
	}
	switch x := v.Interface().(type) {
	case *Duration:
		k.c.positive(k.at(field), x, what)
	case string, int: // Sink.Extra's: read as a duration field is
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(x), Tag: "!!str"}
		if _, ok := x.(int); ok {
			n.Tag = "!!int"
		}
		d, msg, fix := durationValue(n)
		if msg != "" {
			k.c.add(k.at(field), msg, fix)
			return
		}
		k.c.positive(k.at(field), &d, what)
	default:
		if _, ok := k.extra(field); ok {
			k.c.add(k.at(field), fmt.Sprintf("want a duration, got %v", x), durationFix)
		}
	}
}

func (k checker) OneOf(field string, allowed ...string) {
	k.c.oneOf(k.at(field), k.String(field), "", allowed...)
}

// SinkSettings reads sink k's settings by their field names, for a
// runner that opens it through the connector registry
// (connector.SinkKind.OpenResults).
func SinkSettings(k *Sink) connector.Settings { return checker{v: reflect.ValueOf(k)} }

// SourceSettings reads the plan's source block by its field names
// (kafka.topic, generator.rate), with Compile's defaults, for a runner
// that opens it through the connector registry (connector.SourceKind.Open).
func SourceSettings(p *Plan) connector.Settings {
	return checker{path: "source", v: reflect.ValueOf(&p.Source)}
}

// clone returns a deep copy of s, so that compiling (which fills in
// defaults) leaves the caller's spec as it was.
func clone(s *Spec) *Spec {
	c := new(Spec)
	deepCopy(reflect.ValueOf(c).Elem(), reflect.ValueOf(s).Elem())
	return c
}

// deepCopy copies src into the settable dst, following pointers, slices
// and maps (a spec holds no cycles: Load bounds aliases).
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}
