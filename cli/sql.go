package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/internal/sqljob"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// isSQL reports whether path is a SQL job (a file ending in .sql).
func isSQL(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".sql") }

// loadSQL reads and compiles a SQL job, printing its error (with the
// source line and a caret under the place); its warnings join the plan's.
func loadSQL(path string, o IO) (*spec.Plan, bool) {
	data, err := os.ReadFile(o.path(path))
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir: %v\n", trimDir(err, o))
		return nil, false
	}
	j, err := sqljob.Compile(string(data), path)
	if err != nil {
		var pe *sqlparse.Error
		if errors.As(err, &pe) {
			fmt.Fprintf(o.Stderr, "%s:%v\n", path, err)
			for l := range strings.Lines(pe.Excerpt(string(data))) {
				fmt.Fprint(o.Stderr, "  "+l)
			}
		} else {
			fmt.Fprintf(o.Stderr, "%s: %v\n", path, err)
		}
		return nil, false
	}
	p, err := j.Plan()
	if err != nil {
		// What the SQL compiler let through and the spec refused: said
		// in the spec's terms, which name the SQL's parts.
		fmt.Fprintf(o.Stderr, "%s: %v\n", path, err)
		return nil, false
	}
	// The compiler's warnings (each at its line:column) are the plan's,
	// which weir validate and run print and count as a YAML spec's.
	for _, w := range j.Warnings {
		p.Warnings = append(p.Warnings, spec.FieldError{Msg: w})
	}
	return p, true
}
