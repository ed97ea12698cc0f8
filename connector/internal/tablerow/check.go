package tablerow

import (
	"fmt"
	"regexp"

	"github.com/weirstream/weir/connector"
)

var sqlName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckTable checks a table sink's table setting, which defaults to the
// output's name (results, late, late_partial or dead_letter).
func CheckTable(c connector.Checker, output string) {
	if t := c.String("table"); t == "" {
		c.Default("table", output)
	} else if !sqlName.MatchString(t) {
		c.Report("table", fmt.Sprintf("%q is not a plain SQL name", t), "use letters, digits and _, such as order_stats")
	}
}
