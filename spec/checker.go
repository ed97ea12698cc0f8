package spec

import (
	"reflect"
	"strings"
)

// checker is a connector.Checker over one source's or sink's settings
// (v, a struct of yaml-tagged fields) at field path path.
type checker struct {
	c    *compiler
	path string
	v    reflect.Value
}

// field is the named setting (dotted names walk nested structs); the
// zero Value when it, or a block on its way, is unset.
func (k checker) field(name string) reflect.Value {
	v := k.v
	for part := range strings.SplitSeq(name, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		next := reflect.Value{}
		for i := range v.NumField() {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == part {
				next = v.Field(i)
				break
			}
		}
		if !next.IsValid() {
			return reflect.Value{}
		}
		v = next
	}
	return v
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
		s, _ := v.Interface().([]string)
		return s
	}
	return nil
}

func (k checker) Int(field string) int {
	if v := k.field(field); v.IsValid() && v.CanInt() {
		return int(v.Int())
	}
	return 0
}

func (k checker) Set(field string) bool {
	v := k.field(field)
	return v.IsValid() && !v.IsZero()
}

func (k checker) Default(field, value string) {
	if v := k.field(field); v.IsValid() && v.Kind() == reflect.String && v.String() == "" && v.CanSet() {
		v.SetString(value)
	}
}

func (k checker) Report(field, msg, fix string) { k.c.add(k.at(field), msg, fix) }

func (k checker) Positive(field, what string) {
	if v := k.field(field); v.IsValid() {
		if d, ok := v.Interface().(*Duration); ok {
			k.c.positive(k.at(field), d, what)
		}
	}
}

func (k checker) OneOf(field string, allowed ...string) {
	k.c.oneOf(k.at(field), k.String(field), "", allowed...)
}
