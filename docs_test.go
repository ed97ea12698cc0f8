package weir_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The rule catalogues: every rule id a comment or a document cites must be
// defined in one of them (docs/DESIGN.md, "File map").
var catalogues = []string{
	"docs/SEMANTICS.md",     // A1-J3, L1-L12, W1-W14
	"docs/REQUIREMENTS.md",  // R1-R20
	"docs/OBSERVABILITY.md", // doctor rules D1-D22
}

var (
	// ruleDef is a rule's entry in a catalogue: at the start of a line, maybe
	// after a heading mark, a list mark with bold, or a table bar.
	ruleDef = regexp.MustCompile(`(?m)^(?:#{1,6} +|- +\*\*|\| *|\*\*)?([A-JLRW][0-9]{1,2})(?:[.:| *]|$)`)
	// ruleRef is a cited rule id, such as B3, C5.1, W10 or R13 (the
	// sub-step after a dot is part of its rule).
	ruleRef = regexp.MustCompile(`\b([A-JLRW][0-9]{1,2})(?:\.[0-9]+)?\b`)
	// seedRef cites one of the seed articles of docs/SOURCES.md.
	seedRef = regexp.MustCompile(`(?i)\bseeds? (0[0-9]{2})\b`)
	seedDef = regexp.MustCompile(`(?m)^#{1,6} +[Ss]eed (0[0-9]{2})\b`)
	// outside names places outside the repository.
	outside = regexp.MustCompile(`\.\./shared|/work/shared|shared/design|\.\./seeds|\bseeds/`)
	// vague cites documents by a name that is no repository path.
	vague = regexp.MustCompile(`(?i)\bdesign notes\b|\bsource articles\b|\bthe seeds\b`)
	mdRef = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b`)
	urlRe = regexp.MustCompile(`[a-z]+://\S+`)
)

// TestCitationsResolve checks that every rule id cited in a Go comment or a
// Markdown file of the repository is defined in a catalogue, that every
// cited .md file exists in the repository, and that nothing cites a place
// outside it (the design documents and the seed articles are in docs/).
func TestCitationsResolve(t *testing.T) {
	defined := map[string]bool{}
	for _, c := range catalogues {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Errorf("catalogue %s: %v", c, err)
			continue
		}
		for _, m := range ruleDef.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
	}
	seeds := map[string]bool{}
	if b, err := os.ReadFile("docs/SOURCES.md"); err != nil {
		t.Errorf("docs/SOURCES.md: %v", err)
	} else {
		for _, m := range seedDef.FindAllStringSubmatch(string(b), -1) {
			seeds[m[1]] = true
		}
	}
	docs := map[string]bool{} // lower-case names of the files in docs/
	if es, err := os.ReadDir("docs"); err == nil {
		for _, e := range es {
			docs[strings.ToLower(e.Name())] = true
		}
	}

	var bad []string
	check := func(where, dir, text string) {
		report := func(msg string) { bad = append(bad, where+": "+msg) }
		text = urlRe.ReplaceAllString(text, "")
		for _, m := range ruleRef.FindAllStringSubmatch(text, -1) {
			if !defined[m[1]] {
				report("rule " + m[0] + " is in no catalogue")
			}
		}
		for _, m := range seedRef.FindAllStringSubmatch(text, -1) {
			if !seeds[m[1]] || !strings.Contains(text, "SOURCES.md") && where != "docs/SOURCES.md" {
				report(m[0] + " without a docs/SOURCES.md entry cited beside it")
			}
		}
		for _, m := range outside.FindAllString(text, -1) {
			report("cites " + m + ", outside the repository")
		}
		if m := vague.FindString(text); m != "" && !strings.Contains(text, "docs/") {
			report("cites " + m + " without a docs/ path")
		}
		for _, p := range mdRef.FindAllString(text, -1) {
			if !mdExists(dir, p, docs) {
				report("cites " + p + ", which is not in the repository")
			}
		}
	}

	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go":
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			for _, g := range f.Comments {
				check(fset.Position(g.Pos()).String(), filepath.Dir(path), g.Text())
			}
		case ".md":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			check(path, filepath.Dir(path), string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// mdExists reports whether a cited Markdown file is in the repository:
// relative to the citing file's directory or to the root, or, for a bare
// name, in docs/ under any case (so "semantics.md" finds docs/SEMANTICS.md).
func mdExists(dir, p string, docs map[string]bool) bool {
	for _, c := range []string{filepath.Join(dir, p), p} {
		if _, err := os.Stat(c); err == nil {
			return true
		}
	}
	return !strings.Contains(p, "/") && docs[strings.ToLower(p)]
}
