// Package sqlparse parses weir's SQL dialect: Flink SQL's DDL, SET,
// INSERT, EXECUTE STATEMENT SET and queries with window table functions,
// into an AST with the position of every node. It is a hand-written
// recursive-descent parser (no Go SQL parser accepts Flink's window
// syntax or WATERMARK FOR); it knows syntax only, not tables, columns or
// connectors, which the compiler resolves.
package sqlparse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pos is a place in the source: Line and Col count from 1, Col in
// characters; Offset is the byte offset.
type Pos struct {
	Line, Col, Offset int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// tokKind is a token's kind.
type tokKind uint8

const (
	tEOF         tokKind = iota
	tIdent               // a name, keyword or not: Text is as written
	tQuoted              // a `quoted` name: Text is the name
	tString              // a 'string': Text is its value
	tNumber              // Text as written
	tHint                // /*+ ... */: Text is what is inside
	tOp                  // punctuation and operators: Text is the operator
	tPlaceholder         // ${NAME}: Text is NAME
)

// token is one lexeme.
type token struct {
	kind tokKind
	text string
	pos  Pos
	end  int // byte offset after it
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "the end of the input"
	case tString:
		return "'" + strings.ReplaceAll(t.text, "'", "''") + "'"
	case tQuoted:
		return "`" + strings.ReplaceAll(t.text, "`", "``") + "`"
	case tHint:
		return "/*+" + t.text + "*/"
	case tPlaceholder:
		return "${" + t.text + "}"
	}
	return t.text
}

// is reports whether t is the keyword kw (case-insensitive; a quoted name
// is never a keyword).
func (t token) is(kw string) bool { return t.kind == tIdent && strings.EqualFold(t.text, kw) }

// op reports whether t is the operator o.
func (t token) op(o string) bool { return t.kind == tOp && t.text == o }

// lexer turns the source into tokens.
type lexer struct {
	src       string
	off       int
	line, col int
}

// Error is a syntax or resolution error at a place in the source: Msg
// says what is wrong, Text is the offending text (empty at the end of the
// input), Hint what to write instead (empty when there is nothing to
// suggest).
type Error struct {
	Pos  Pos
	Text string
	Msg  string
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Pos, e.Msg)
	if e.Text != "" {
		fmt.Fprintf(&b, " (at %s)", quoteText(e.Text))
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// Excerpt is the line of src the error is on, then a caret under its
// column (tabs shown as spaces), each line ending in a newline; "" when
// the position is not in src.
func (e *Error) Excerpt(src string) string {
	lines := strings.Split(src, "\n")
	if e.Pos.Line < 1 || e.Pos.Line > len(lines) {
		return ""
	}
	return strings.ReplaceAll(lines[e.Pos.Line-1], "\t", " ") + "\n" + strings.Repeat(" ", max(e.Pos.Col-1, 0)) + "^\n"
}

// quoteText shows offending text, cut to a readable length.
func quoteText(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "..."
	}
	return "\"" + s + "\""
}

func (l *lexer) pos() Pos { return Pos{Line: l.line, Col: l.col, Offset: l.off} }

// advance moves past n bytes, counting lines and characters.
func (l *lexer) advance(n int) {
	for _, r := range l.src[l.off : l.off+n] {
		if r == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
	l.off += n
}

// ops are the operators, longest first where one is a prefix of another.
var ops = []string{"<>", "<=", ">=", "!=", "||", "=>", "(", ")", ",", ".", ";", "=", "<", ">", "+", "-", "*", "/", "%", "[", "]"}

// next returns the next token.
func (l *lexer) next() (token, error) {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.advance(1)
			continue
		case strings.HasPrefix(l.src[l.off:], "--"):
			n := strings.IndexByte(l.src[l.off:], '\n')
			if n < 0 {
				n = len(l.src) - l.off
			}
			l.advance(n)
			continue
		case strings.HasPrefix(l.src[l.off:], "/*") && !strings.HasPrefix(l.src[l.off:], "/*+"):
			start := l.pos()
			n := strings.Index(l.src[l.off+2:], "*/")
			if n < 0 {
				return token{}, &Error{Pos: start, Text: "/*", Msg: "a comment that is never closed", Hint: "end it with */"}
			}
			l.advance(n + 4)
			continue
		}
		break
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: start, end: l.off}, nil
	}
	rest := l.src[l.off:]
	tok := func(k tokKind, text string, n int) (token, error) {
		l.advance(n)
		return token{kind: k, text: text, pos: start, end: l.off}, nil
	}
	c := rest[0]
	switch {
	case strings.HasPrefix(rest, "/*+"):
		n := strings.Index(rest[3:], "*/")
		if n < 0 {
			return token{}, &Error{Pos: start, Text: "/*+", Msg: "a hint that is never closed", Hint: "end it with */"}
		}
		return tok(tHint, rest[3:3+n], n+5)
	case strings.HasPrefix(rest, "${"):
		n := strings.IndexByte(rest, '}')
		if n < 0 {
			return token{}, &Error{Pos: start, Text: "${", Msg: "a placeholder that is never closed"}
		}
		return tok(tPlaceholder, rest[2:n], n+1)
	case c == '\'':
		return l.quoted(start, '\'', tString)
	case c == '`':
		return l.quoted(start, '`', tQuoted)
	case c >= '0' && c <= '9' || c == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
		n := 0
		digits := func() {
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
		}
		digits()
		if n < len(rest) && rest[n] == '.' {
			n++
			digits()
		}
		if n < len(rest) && (rest[n] == 'e' || rest[n] == 'E') {
			m := n + 1
			if m < len(rest) && (rest[m] == '+' || rest[m] == '-') {
				m++
			}
			if m < len(rest) && rest[m] >= '0' && rest[m] <= '9' {
				n = m
				digits()
			}
		}
		if n < len(rest) && isIdentRune(rune(rest[n])) {
			m := n
			for m < len(rest) && isIdentRune(rune(rest[m])) {
				m++
			}
			return token{}, &Error{Pos: start, Text: rest[:m], Msg: "a number run into a name", Hint: "put a space between them, or quote the name with backquotes"}
		}
		return tok(tNumber, rest[:n], n)
	}
	r, size := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError && size == 1 {
		return token{}, &Error{Pos: start, Text: fmt.Sprintf("\\x%02x", c), Msg: "a byte that is not UTF-8"}
	}
	if isIdentStart(r) {
		n := size
		for n < len(rest) {
			r, s := utf8.DecodeRuneInString(rest[n:])
			if !isIdentRune(r) {
				break
			}
			n += s
		}
		return tok(tIdent, rest[:n], n)
	}
	for _, o := range ops {
		if strings.HasPrefix(rest, o) {
			if o == "!=" {
				return tok(tOp, "<>", 2)
			}
			return tok(tOp, o, len(o))
		}
	}
	hint := ""
	if r == '"' {
		hint = "strings take single quotes ('text') and names backquotes (`name`)"
	}
	return token{}, &Error{Pos: start, Text: string(r), Msg: "a character that is not part of the language", Hint: hint}
}

// quoted reads a string or quoted name; a doubled quote stands for one.
func (l *lexer) quoted(start Pos, q byte, k tokKind) (token, error) {
	rest := l.src[l.off:]
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(rest[i:], q)
		if j < 0 {
			what := "a string"
			if k == tQuoted {
				what = "a quoted name"
			}
			return token{}, &Error{Pos: start, Text: firstLine(rest), Msg: what + " that is never closed", Hint: fmt.Sprintf("end it with %c (write %c%c for a %c inside)", q, q, q, q)}
		}
		b.WriteString(rest[i : i+j])
		i += j + 1
		if i < len(rest) && rest[i] == q {
			b.WriteByte(q)
			i++
			continue
		}
		break
	}
	l.advance(i)
	return token{kind: k, text: b.String(), pos: start, end: l.off}, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
