// Package suggest finds the known name closest to a misspelt one, for
// did-you-mean hints (the job spec's fields and values, the CLI's
// flags, SQL's keywords, tables and columns).
package suggest

import (
	"fmt"
	"strconv"
	"strings"
)

// Closest is the known name within edit distance 2 of name (or equal to it
// ignoring case), the nearest first; "" when there is none.
func Closest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		d := 0
		if !strings.EqualFold(k, name) {
			d = levenshtein(name, k, bestDist)
		}
		if d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// Or is the did-you-mean of the known name closest to name, or otherwise
// when none is close.
func Or(name string, known []string, otherwise string) string {
	if c := Closest(name, known); c != "" {
		return DidYouMean(c)
	}
	return otherwise
}

// DidYouMean is the suggestion of a known name: did you mean "name"?
func DidYouMean(name string) string { return fmt.Sprintf("did you mean %q?", name) }

// levenshtein is the edit distance between a and b in runes, or limit when
// it is limit or more.
func levenshtein(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra)-len(rb) >= limit || len(rb)-len(ra) >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := range ra {
		cur[0] = i + 1
		for j := range rb {
			cost := 1
			if ra[i] == rb[j] {
				cost = 0
			}
			cur[j+1] = min(prev[j+1]+1, cur[j]+1, prev[j]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit)
}

// FreeName is base, or when taken says base is taken, base with the
// first free suffix 0, 1, ... (total0), as Flink's planner names a
// second column of one name.
func FreeName(base string, taken func(string) bool) string {
	name := base
	for i := 0; taken(name); i++ {
		name = base + strconv.Itoa(i)
	}
	return name
}
