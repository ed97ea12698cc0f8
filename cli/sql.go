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
// source line and a caret under the place) or its warnings.
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
	for _, w := range j.Warnings {
		fmt.Fprintf(o.Stderr, "%s:%s\n", path, w)
	}
	p, err := j.Plan()
	if err != nil {
		// What the SQL compiler let through and the spec refused: said
		// in the spec's terms, which name the SQL's parts.
		fmt.Fprintf(o.Stderr, "%s: %v\n", path, err)
		return nil, false
	}
	return p, true
}
