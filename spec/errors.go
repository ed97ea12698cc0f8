package spec

import (
	"fmt"
	"strings"
)

// FieldError is one problem with a spec: the field's path (such as
// "window.size" or "aggregate[1].fn"), the line it is on (0 when the field
// is missing), what is wrong and how to fix it.
type FieldError struct {
	Path string
	Line int
	Msg  string
	Fix  string
	// Column is the YAML node's column, when known: it orders errors
	// of one line (it is not printed).
	Column int
}

func (e FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Errors is every problem found in a spec, in document order.
type Errors []FieldError

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}
