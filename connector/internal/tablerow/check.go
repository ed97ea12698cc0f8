package tablerow

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/weirstream/weir/connector"
)

var sqlName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckTable checks a table sink's table setting, which defaults to the
// output's name (results, late, late_partial or dead_letter); with
// schema, it may name its schema too (analytics.order_stats).
func CheckTable(c connector.Checker, output string, schema bool) {
	t := c.String("table")
	if t == "" {
		c.Default("table", output)
		return
	}
	if s, name, ok := strings.Cut(t, "."); schema && ok && sqlName.MatchString(s) && sqlName.MatchString(name) {
		return
	}
	if !sqlName.MatchString(t) {
		fix := "use letters, digits and _, such as order_stats"
		if schema {
			fix += ", or a schema and a table, such as analytics.order_stats"
		}
		c.Report("table", fmt.Sprintf("%q is not a plain SQL name", t), fix)
	}
}
