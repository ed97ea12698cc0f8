package sqlparse

import "github.com/weirstream/weir/internal/suggest"

// closest is the known word nearest a misspelt one, for a did-you-mean.
func closest(name string, known []string) (string, bool) {
	c := suggest.Closest(name, known)
	return c, c != ""
}
