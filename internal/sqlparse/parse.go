package sqlparse

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/suggest"
)

// Parse parses a file of statements separated by semicolons. The error,
// when there is one, is an *Error.
func Parse(src string) (*Script, error) {
	p := &parser{lx: lexer{src: src, line: 1, col: 1}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	s := &Script{}
	for {
		for p.tok.op(";") {
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if p.tok.kind == tEOF {
			return s, nil
		}
		st, err := p.stmt()
		if err != nil {
			return nil, err
		}
		s.Stmts = append(s.Stmts, st)
		if !p.tok.op(";") && p.tok.kind != tEOF {
			return nil, p.errAt(p.tok, "statements are separated by ;", "expected the end of the statement, found %s", describe(p.tok))
		}
	}
}

// ParseExpr parses one expression, the whole of src (a job spec's
// where). The error, when there is one, is an *Error.
func ParseExpr(src string) (x Expr, err error) {
	p := &parser{lx: lexer{src: src, line: 1, col: 1}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(errUnwind)
			if !ok {
				panic(r)
			}
			x, err = nil, u.err
		}
	}()
	x = p.expr()
	if p.tok.kind != tEOF {
		return nil, p.errAt(p.tok, "", "expected the end of the expression, found %s", describe(p.tok))
	}
	return x, nil
}

// parser holds one token of lookahead (tok) and, for the few places that
// need two, peeks by copying the lexer.
type parser struct {
	lx  lexer
	tok token
}

// errUnwind carries an *Error out of deep recursion.
type errUnwind struct{ err *Error }

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// peek returns the token after tok.
func (p *parser) peek() token {
	lx := p.lx
	t, err := lx.next()
	if err != nil {
		return token{kind: tEOF}
	}
	return t
}

// next moves on, or unwinds with the lexer's error.
func (p *parser) next() token {
	t := p.tok
	if err := p.advance(); err != nil {
		panic(errUnwind{err.(*Error)})
	}
	return t
}

func (p *parser) errAt(t token, hint, format string, args ...any) *Error {
	text := ""
	if t.kind != tEOF {
		text = t.String()
	}
	if t.kind == tPlaceholder && hint == "" {
		hint = "fill in the placeholder ${" + t.text + "} before running the file"
	}
	return &Error{Pos: t.pos, Text: text, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// fail unwinds with an error at tok.
func (p *parser) fail(hint, format string, args ...any) {
	panic(errUnwind{p.errAt(p.tok, hint, format, args...)})
}

// keyword reports whether tok is kw, moving past it if so.
func (p *parser) keyword(kw string) bool {
	if p.tok.is(kw) {
		p.next()
		return true
	}
	return false
}

// keywords moves past the keywords kws if tok begins them.
func (p *parser) keywords(kws ...string) bool {
	if !p.tok.is(kws[0]) {
		return false
	}
	lx, tok := p.lx, p.tok
	for _, kw := range kws {
		if !p.tok.is(kw) {
			p.lx, p.tok = lx, tok
			return false
		}
		p.next()
	}
	return true
}

// expect moves past the keyword kw or fails saying what was expected.
func (p *parser) expect(kw, what string) token {
	if !p.tok.is(kw) {
		p.fail("", "expected %s, found %s", what, describe(p.tok))
	}
	return p.next()
}

// expectOp moves past the operator o or fails.
func (p *parser) expectOp(o, what string) token {
	if !p.tok.op(o) {
		p.fail("", "expected %s, found %s", what, describe(p.tok))
	}
	return p.next()
}

// describe names a token in a message.
func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "the end of the input"
	case tString:
		return "a string"
	case tNumber:
		return "a number"
	case tPlaceholder:
		return "an unfilled placeholder"
	}
	return t.String()
}

// reserved are the keywords that cannot be a name without backquotes
// where a name is read (an alias after an expression, a table).
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true,
	"UNION": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "FULL": true, "CROSS": true, "ON": true,
	"AND": true, "OR": true, "NOT": true, "AS": true, "BY": true, "WITH": true, "CASE": true, "WHEN": true, "THEN": true,
	"ELSE": true, "END": true, "IS": true, "IN": true, "BETWEEN": true, "LIKE": true, "INSERT": true, "INTO": true,
	"CREATE": true, "TABLE": true, "VIEW": true, "SET": true, "WATERMARK": true, "FOR": true, "PRIMARY": true,
	"DISTINCT": true, "ALL": true, "NULL": true, "TRUE": true, "FALSE": true, "OVER": true, "PARTITION": true,
	"EXECUTE": true, "BEGIN": true, "INTERVAL": true, "CAST": true, "OUTER": true, "ASC": true, "DESC": true,
	"CONSTRAINT": true, "LATERAL": true, "FILTER": true,
}

func isReserved(t token) bool { return t.kind == tIdent && reserved[strings.ToUpper(t.text)] }

// keywordCall reports whether keyword name is also a function's name
// before a parenthesis: LEFT(s, n) and RIGHT(s, n), as in Flink.
func keywordCall(name string) bool {
	n := strings.ToUpper(name)
	return n == "LEFT" || n == "RIGHT"
}

// ident reads a name (what names it in a message).
func (p *parser) ident(what string) Ident {
	switch {
	case p.tok.kind == tQuoted:
		t := p.next()
		return Ident{Pos: t.pos, Name: t.text, Quoted: true}
	case p.tok.kind == tIdent && !isReserved(p.tok):
		t := p.next()
		return Ident{Pos: t.pos, Name: t.text}
	case p.tok.kind == tIdent:
		p.fail("quote it with backquotes (`"+p.tok.text+"`) to use the keyword as a name", "expected %s, found the keyword %s", what, strings.ToUpper(p.tok.text))
	}
	p.fail("", "expected %s, found %s", what, describe(p.tok))
	return Ident{}
}

// name reads a possibly qualified name.
func (p *parser) name(what string) Name {
	n := Name{Parts: []Ident{p.ident(what)}}
	for p.tok.op(".") {
		p.next()
		n.Parts = append(n.Parts, p.ident(what))
	}
	return n
}

// str reads a string literal.
func (p *parser) str(what string) (string, Pos) {
	if p.tok.kind != tString {
		p.fail("", "expected %s (a string in single quotes), found %s", what, describe(p.tok))
	}
	t := p.next()
	return t.text, t.pos
}

// stmt reads one statement.
func (p *parser) stmt() (st Stmt, err error) {
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(errUnwind)
			if !ok {
				panic(r)
			}
			err = u.err
		}
	}()
	t := p.tok
	switch {
	case t.is("SET"):
		return p.set(), nil
	case t.is("CREATE"):
		return p.create(), nil
	case t.is("INSERT"):
		return p.insert(), nil
	case t.is("EXECUTE"):
		p.next()
		p.expect("STATEMENT", "STATEMENT SET after EXECUTE")
		p.expect("SET", "SET after EXECUTE STATEMENT")
		p.expect("BEGIN", "BEGIN after EXECUTE STATEMENT SET")
		return p.statementSet(t.pos), nil
	case t.is("BEGIN"):
		p.next()
		p.expect("STATEMENT", "STATEMENT SET after BEGIN")
		p.expect("SET", "SET after BEGIN STATEMENT")
		if p.tok.op(";") {
			p.next()
		}
		return p.statementSet(t.pos), nil
	case t.is("SELECT"), t.is("WITH"), t.op("("):
		return &QueryStmt{Query: p.query()}, nil
	}
	hint := "a file holds SET, CREATE TABLE, CREATE VIEW, INSERT INTO, EXECUTE STATEMENT SET and SELECT statements"
	if t.kind == tIdent {
		hint = suggest.Or(strings.ToUpper(t.text), []string{"SET", "CREATE", "INSERT", "EXECUTE", "SELECT", "WITH"}, hint)
	}
	return nil, p.errAt(t, hint, "expected a statement, found %s", describe(t))
}

func (p *parser) set() *Set {
	t := p.next()
	s := &Set{Pos: t.pos}
	if p.tok.kind == tString {
		s.Key, _ = p.str("the key")
	} else {
		// SET key = value, unquoted, as Flink's SQL client also takes.
		var parts []string
		for p.tok.kind == tIdent || p.tok.kind == tQuoted || p.tok.op(".") || p.tok.op("-") {
			parts = append(parts, p.next().text)
		}
		if len(parts) == 0 {
			p.fail("write SET 'key' = 'value'", "expected the key to set, found %s", describe(p.tok))
		}
		s.Key = strings.Join(parts, "")
	}
	p.expectOp("=", "= after SET's key")
	switch p.tok.kind {
	case tString:
		s.Value, _ = p.str("the value")
	case tNumber, tIdent:
		s.Value = p.next().text
	default:
		p.fail("write SET 'key' = 'value'", "expected the value to set, found %s", describe(p.tok))
	}
	return s
}

func (p *parser) create() Stmt {
	t := p.next()
	temp := p.keyword("TEMPORARY")
	switch {
	case p.keyword("TABLE"):
		return p.createTable(t.pos, temp)
	case p.keyword("VIEW"):
		v := &CreateView{Pos: t.pos, Temporary: temp}
		v.IfNotExists = p.keywords("IF", "NOT", "EXISTS")
		v.Name = p.name("the view's name")
		if p.tok.op("(") {
			p.next()
			v.Columns = p.identList("a column name")
			p.expectOp(")", ") after the view's columns")
		}
		p.expect("AS", "AS before the view's query")
		v.Query = p.query()
		return v
	}
	p.fail("weir creates tables and views", "expected TABLE or VIEW after CREATE, found %s", describe(p.tok))
	return nil
}

func (p *parser) identList(what string) []Ident {
	ids := []Ident{p.ident(what)}
	for p.tok.op(",") {
		p.next()
		ids = append(ids, p.ident(what))
	}
	return ids
}

func (p *parser) createTable(pos Pos, temp bool) *CreateTable {
	c := &CreateTable{Pos: pos, Temporary: temp}
	c.IfNotExists = p.keywords("IF", "NOT", "EXISTS")
	c.Name = p.name("the table's name")
	p.expectOp("(", "( and the table's columns")
	for {
		switch {
		case p.tok.is("WATERMARK"):
			t := p.next()
			if c.Watermark != nil {
				panic(errUnwind{p.errAt(t, "", "a second WATERMARK; a table has one")})
			}
			p.expect("FOR", "FOR after WATERMARK")
			col := p.ident("the watermark's column")
			p.expect("AS", "AS before the watermark's expression")
			c.Watermark = &Watermark{Pos: t.pos, Column: col, Expr: p.expr()}
		case p.tok.is("PRIMARY") || p.tok.is("CONSTRAINT"):
			pk := &PrimaryKey{Pos: p.tok.pos}
			if p.keyword("CONSTRAINT") {
				pk.Constraint = p.ident("the constraint's name")
			}
			p.expect("PRIMARY", "PRIMARY KEY")
			p.expect("KEY", "KEY after PRIMARY")
			p.expectOp("(", "( and the key's columns")
			pk.Columns = p.identList("a key column")
			p.expectOp(")", ") after the key's columns")
			if !p.keywords("NOT", "ENFORCED") {
				p.fail("Flink does not enforce primary keys: write PRIMARY KEY (...) NOT ENFORCED", "expected NOT ENFORCED after the primary key, found %s", describe(p.tok))
			}
			if c.PrimaryKey != nil {
				panic(errUnwind{&Error{Pos: pk.Pos, Msg: "a second PRIMARY KEY; a table has one"}})
			}
			c.PrimaryKey = pk
		default:
			c.Columns = append(c.Columns, p.column())
		}
		if p.tok.op(",") {
			p.next()
			continue
		}
		p.expectOp(")", ", or ) after a column")
		break
	}
	if p.keyword("COMMENT") {
		p.str("the comment")
	}
	if p.tok.is("PARTITIONED") || p.tok.is("LIKE") || p.tok.is("DISTRIBUTED") {
		p.fail("leave it out; weir's tables are unpartitioned", "%s is not supported", strings.ToUpper(p.tok.text))
	}
	if p.keyword("WITH") {
		c.Options = p.options()
	}
	return c
}

// column reads a column: name type [METADATA [FROM 'key'] [VIRTUAL]] or
// name AS expr.
func (p *parser) column() *Column {
	col := &Column{Pos: p.tok.pos, Name: p.ident("a column name (or WATERMARK FOR, PRIMARY KEY)")}
	if p.keyword("AS") {
		col.Computed = p.expr()
		p.columnTail(col)
		return col
	}
	col.Type = p.typ()
	if p.keyword("METADATA") {
		col.Metadata = true
		if p.keyword("FROM") {
			col.MetadataKey, _ = p.str("the metadata key")
		}
		col.Virtual = p.keyword("VIRTUAL")
	}
	p.columnTail(col)
	return col
}

func (p *parser) columnTail(col *Column) {
	if p.keyword("COMMENT") {
		col.Comment, _ = p.str("the comment")
	}
}

// options reads ('k' = 'v', ...).
func (p *parser) options() []Option {
	p.expectOp("(", "( and the table's options")
	var opts []Option
	if p.tok.op(")") {
		p.next()
		return opts
	}
	for {
		k, pos := p.str("an option's key")
		p.expectOp("=", "= after the option's key")
		var v string
		if p.tok.kind == tPlaceholder {
			panic(errUnwind{p.errAt(p.tok, "", "option '%s' is an unfilled placeholder", k)})
		}
		v, _ = p.str("the option's value")
		opts = append(opts, Option{Pos: pos, Key: k, Value: v})
		if p.tok.op(",") {
			p.next()
			continue
		}
		p.expectOp(")", ", or ) after an option")
		return opts
	}
}

// typ reads a type.
func (p *parser) typ() *Type {
	if p.tok.kind != tIdent {
		p.fail("", "expected a type, found %s", describe(p.tok))
	}
	t := p.next()
	ty := &Type{Pos: t.pos, Name: strings.ToUpper(t.text)}
	switch ty.Name {
	case "ROW":
		closer := ">"
		if p.tok.op("(") {
			closer = ")"
			p.next()
		} else {
			p.expectOp("<", "< and the ROW's fields")
		}
		for {
			f := &Column{Pos: p.tok.pos, Name: p.ident("a field name")}
			f.Type = p.typ()
			if p.tok.kind == tString { // a field's description
				f.Comment, _ = p.str("")
			}
			ty.Fields = append(ty.Fields, f)
			if p.tok.op(",") {
				p.next()
				continue
			}
			break
		}
		p.expectOp(closer, ", or "+closer+" after a ROW field")
	case "ARRAY", "MULTISET":
		p.expectOp("<", "< and the element type")
		ty.Elems = []*Type{p.typ()}
		p.expectOp(">", "> after the element type")
	case "MAP":
		p.expectOp("<", "< and the key type")
		k := p.typ()
		p.expectOp(",", ", and the value type")
		v := p.typ()
		ty.Elems = []*Type{k, v}
		p.expectOp(">", "> after the value type")
	case "DOUBLE":
		p.keyword("PRECISION")
	case "CHARACTER":
		if p.keyword("VARYING") {
			ty.Name = "VARCHAR"
		}
	}
	if p.tok.op("(") {
		p.next()
		for {
			if p.tok.kind != tNumber {
				p.fail("", "expected a number in the type's parameters, found %s", describe(p.tok))
			}
			n, err := strconv.Atoi(p.tok.text)
			if err != nil {
				p.fail("", "a type parameter must be a whole number")
			}
			p.next()
			ty.Params = append(ty.Params, n)
			if !p.tok.op(",") {
				break
			}
			p.next()
		}
		p.expectOp(")", ") after the type's parameters")
	}
	if ty.Name == "TIMESTAMP" && p.keywords("WITH", "LOCAL", "TIME", "ZONE") {
		ty.LocalTZ = true
	} else if ty.Name == "TIMESTAMP" {
		p.keywords("WITHOUT", "TIME", "ZONE")
	}
	if p.keywords("NOT", "NULL") {
		ty.NotNull = true
	} else {
		p.keyword("NULL")
	}
	return ty
}

func (p *parser) insert() *Insert {
	t := p.next()
	if p.tok.is("OVERWRITE") {
		p.fail("use INSERT INTO: weir's sinks upsert or append", "INSERT OVERWRITE is not supported")
	}
	p.expect("INTO", "INTO after INSERT")
	in := &Insert{Pos: t.pos, Table: p.name("the sink table's name")}
	if p.tok.kind == tHint {
		h := p.next()
		in.Hint = &Hint{Pos: h.pos, Text: h.text}
	}
	if p.tok.op("(") && !p.peek().is("SELECT") && !p.peek().is("WITH") {
		p.next()
		in.Columns = p.identList("a column name")
		p.expectOp(")", ") after the columns")
	}
	in.Query = p.query()
	return in
}

func (p *parser) statementSet(pos Pos) *StatementSet {
	s := &StatementSet{Pos: pos}
	for {
		for p.tok.op(";") {
			p.next()
		}
		if p.keyword("END") {
			if len(s.Inserts) == 0 {
				panic(errUnwind{&Error{Pos: pos, Msg: "a statement set without an INSERT"}})
			}
			return s
		}
		if !p.tok.is("INSERT") {
			p.fail("a statement set holds INSERT INTO statements and ends with END", "expected INSERT or END, found %s", describe(p.tok))
		}
		s.Inserts = append(s.Inserts, p.insert())
		if !p.tok.op(";") && !p.tok.is("END") {
			p.fail("", "expected ; after the INSERT, found %s", describe(p.tok))
		}
	}
}

// query reads [WITH ...] select [UNION ALL select ...] [ORDER BY]
// [LIMIT].
func (p *parser) query() *Query {
	q := &Query{Pos: p.tok.pos}
	if p.keyword("WITH") {
		for {
			c := &CTE{Name: p.ident("the name of a WITH query")}
			p.expect("AS", "AS after the WITH query's name")
			p.expectOp("(", "( and the WITH query")
			c.Query = p.query()
			p.expectOp(")", ") after the WITH query")
			q.With = append(q.With, c)
			if !p.tok.op(",") {
				break
			}
			p.next()
		}
	}
	for {
		q.Selects = append(q.Selects, p.selectStmt())
		if !p.tok.is("UNION") {
			break
		}
		p.next()
		if !p.keyword("ALL") {
			p.fail("weir has UNION ALL (UNION's de-duplication is not supported)", "expected ALL after UNION, found %s", describe(p.tok))
		}
	}
	if p.keywords("ORDER", "BY") {
		q.OrderBy = p.orderItems()
	}
	if p.keyword("LIMIT") {
		q.Limit = p.expr()
	}
	return q
}

func (p *parser) orderItems() []*OrderItem {
	var items []*OrderItem
	for {
		it := &OrderItem{Expr: p.expr()}
		if p.keyword("DESC") {
			it.Desc = true
		} else {
			p.keyword("ASC")
		}
		items = append(items, it)
		if !p.tok.op(",") {
			return items
		}
		p.next()
	}
}

func (p *parser) selectStmt() *Select {
	if p.tok.op("(") {
		p.fail("", "a parenthesized query here is not supported")
	}
	t := p.expect("SELECT", "SELECT")
	s := &Select{Pos: t.pos}
	if p.tok.kind == tHint {
		h := p.next()
		s.Hint = &Hint{Pos: h.pos, Text: h.text}
	}
	if p.keyword("DISTINCT") {
		s.Distinct = true
	} else {
		p.keyword("ALL")
	}
	for {
		s.Items = append(s.Items, p.selectItem())
		if !p.tok.op(",") {
			break
		}
		p.next()
	}
	if p.keyword("FROM") {
		s.From = p.from()
	}
	if p.keyword("WHERE") {
		s.Where = p.expr()
	}
	if p.keywords("GROUP", "BY") {
		for {
			if p.tok.is("GROUPING") && p.peek().is("SETS") || (p.tok.is("ROLLUP") || p.tok.is("CUBE")) && p.peek().op("(") {
				what := strings.ToUpper(p.tok.text)
				if what == "GROUPING" {
					what = "GROUPING SETS"
				}
				p.fail("run one query per grouping (a statement set of INSERTs can share the table's read)", "%s is not supported yet", what)
			}
			s.GroupBy = append(s.GroupBy, p.expr())
			if !p.tok.op(",") {
				break
			}
			p.next()
		}
	}
	if p.keyword("HAVING") {
		s.Having = p.expr()
	}
	return s
}

func (p *parser) selectItem() *SelectItem {
	it := &SelectItem{Pos: p.tok.pos}
	if p.tok.op("*") {
		p.next()
		it.Star = true
		return it
	}
	e := p.expr()
	if r, ok := e.(*Ref); ok && p.tok.op(".") && p.peek().op("*") {
		p.next()
		p.next()
		it.Star, it.Expr = true, r
		return it
	}
	it.Expr = e
	if p.tok.is("FILTER") {
		// A call's FILTER is read with the call: this one follows
		// what is no call.
		p.fail("FILTER (WHERE condition) follows an aggregate function's call, such as COUNT(*) FILTER (WHERE amount > 10)", "FILTER after %s, which is not a function's call", FormatExpr(e))
	}
	it.Alias = p.alias()
	return it
}

// alias reads [AS] name, or nothing.
func (p *parser) alias() Ident {
	if p.keyword("AS") {
		return p.ident("a name after AS")
	}
	if p.tok.kind == tQuoted || p.tok.kind == tIdent && !isReserved(p.tok) {
		return p.ident("")
	}
	return Ident{}
}

// from reads a FROM clause's items and joins.
func (p *parser) from() From {
	left := p.fromItem()
	for {
		pos := p.tok.pos
		var jt JoinType
		switch {
		case p.tok.op(","):
			p.next()
			jt = CommaJoin
		case p.keyword("JOIN"):
			jt = InnerJoin
		case p.keywords("INNER", "JOIN"):
			jt = InnerJoin
		case p.tok.is("LEFT"), p.tok.is("RIGHT"), p.tok.is("FULL"):
			kind := strings.ToUpper(p.next().text)
			p.keyword("OUTER")
			p.expect("JOIN", "JOIN after "+kind)
			jt = JoinType(kind + " JOIN")
		case p.keywords("CROSS", "JOIN"):
			jt = CrossJoin
		default:
			return left
		}
		j := &Join{Pos: pos, Type: jt, Left: left, Right: p.fromItem()}
		if jt != CommaJoin && jt != CrossJoin {
			p.expect("ON", "ON and the join's condition")
			j.On = p.expr()
		}
		left = j
	}
}

func (p *parser) fromItem() From {
	pos := p.tok.pos
	switch {
	case p.tok.is("TABLE") && p.peek().op("("):
		p.next()
		p.next()
		e := p.expr()
		c, ok := e.(*Call)
		if !ok {
			panic(errUnwind{&Error{Pos: e.exprPos(), Msg: "TABLE(...) takes a window table function", Hint: "such as TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))"}})
		}
		p.expectOp(")", ") after the table function")
		return &TableFunc{Pos: pos, Call: c, Alias: p.alias()}
	case p.tok.is("LATERAL"):
		p.fail("", "LATERAL is not supported")
	case p.tok.op("("):
		p.next()
		if !p.tok.is("SELECT") && !p.tok.is("WITH") {
			inner := p.from()
			p.expectOp(")", ")")
			return inner
		}
		q := p.query()
		p.expectOp(")", ") after the subquery")
		return &Subquery{Pos: pos, Query: q, Alias: p.alias()}
	}
	t := &TableRef{Name: p.name("a table or view")}
	if p.tok.kind == tHint {
		h := p.next()
		t.Hint = &Hint{Pos: h.pos, Text: h.text}
	}
	if p.tok.is("FOR") {
		p.fail("", "FOR SYSTEM_TIME AS OF (temporal joins) is not supported")
	}
	t.Alias = p.alias()
	return t
}

// Expressions, lowest precedence first.

func (p *parser) expr() Expr { return p.or() }

func (p *parser) or() Expr { return p.leftAssoc(p.and, "OR") }

func (p *parser) and() Expr { return p.leftAssoc(p.not, "AND") }

// leftAssoc reads operands joined by the binary operators ops (keywords
// or symbols), left to right.
func (p *parser) leftAssoc(operand func() Expr, ops ...string) Expr {
	x := operand()
	for {
		i := slices.IndexFunc(ops, func(o string) bool { return p.tok.op(o) || p.tok.is(o) })
		if i < 0 {
			return x
		}
		t := p.next()
		x = &Binary{Pos: t.pos, Op: ops[i], X: x, Y: operand()}
	}
}

func (p *parser) not() Expr {
	if p.tok.is("NOT") {
		t := p.next()
		return &Unary{Pos: t.pos, Op: "NOT", X: p.not()}
	}
	return p.comparison()
}

var comparisons = []string{"=", "<>", "<", "<=", ">", ">="}

func (p *parser) comparison() Expr {
	x := p.concat()
	for {
		t := p.tok
		switch {
		case t.kind == tOp && slices.Contains(comparisons, t.text):
			p.next()
			x = &Binary{Pos: t.pos, Op: t.text, X: x, Y: p.concat()}
		case t.is("IS"):
			p.next()
			n := &IsNull{Pos: t.pos, X: x, Not: p.keyword("NOT")}
			if p.tok.is("DISTINCT") && p.peek().is("FROM") {
				// x IS [NOT] DISTINCT FROM y: equality with NULL a value.
				p.next()
				p.next()
				op := "IS DISTINCT FROM"
				if n.Not {
					op = "IS NOT DISTINCT FROM"
				}
				x = &Binary{Pos: t.pos, Op: op, X: x, Y: p.concat()}
				continue
			}
			switch {
			case p.keyword("NULL"):
				n.What = "NULL"
			case p.keyword("TRUE"):
				n.What = "TRUE"
			case p.keyword("FALSE"):
				n.What = "FALSE"
			default:
				p.fail("", "expected NULL, TRUE or FALSE after IS, found %s", describe(p.tok))
			}
			x = n
		case t.is("NOT") && (p.peek().is("BETWEEN") || p.peek().is("IN") || p.peek().is("LIKE")):
			p.next()
			x = p.predicate(x, t.pos, true)
		case t.is("BETWEEN") || t.is("IN") || t.is("LIKE"):
			x = p.predicate(x, t.pos, false)
		default:
			return x
		}
	}
}

func (p *parser) predicate(x Expr, pos Pos, not bool) Expr {
	switch {
	case p.keyword("BETWEEN"):
		p.keyword("ASYMMETRIC")
		lo := p.concat()
		p.expect("AND", "AND in BETWEEN ... AND ...")
		return &Between{Pos: pos, X: x, Lo: lo, Hi: p.concat(), Not: not}
	case p.keyword("IN"):
		p.expectOp("(", "( and the IN list")
		if p.tok.is("SELECT") {
			p.fail("", "IN (SELECT ...) is not supported")
		}
		in := &In{Pos: pos, X: x, Not: not}
		for {
			in.List = append(in.List, p.expr())
			if !p.tok.op(",") {
				break
			}
			p.next()
		}
		p.expectOp(")", ", or ) in the IN list")
		return in
	}
	p.expect("LIKE", "LIKE")
	op := "LIKE"
	if not {
		op = "NOT LIKE"
	}
	y := p.concat()
	if p.tok.is("ESCAPE") {
		p.fail("compare with = or SUBSTRING instead, where the pattern needs a literal % or _", "LIKE ... ESCAPE is not supported yet")
	}
	return &Binary{Pos: pos, Op: op, X: x, Y: y}
}

func (p *parser) concat() Expr { return p.leftAssoc(p.additive, "||") }

func (p *parser) additive() Expr { return p.leftAssoc(p.multiplicative, "+", "-") }

func (p *parser) multiplicative() Expr { return p.leftAssoc(p.unary, "*", "/", "%") }

func (p *parser) unary() Expr {
	if p.tok.op("-") || p.tok.op("+") {
		t := p.next()
		return &Unary{Pos: t.pos, Op: t.text, X: p.unary()}
	}
	return p.postfix()
}

func (p *parser) postfix() Expr {
	x := p.primary()
	for {
		switch {
		case p.tok.op("["):
			t := p.next()
			i := p.expr()
			p.expectOp("]", "] after the index")
			x = &Index{Pos: t.pos, X: x, I: i}
		case p.tok.op(".") && !p.peek().op("*"):
			// A field of a ROW-valued expression: (expr).field.
			p.next()
			f := p.ident("a field name")
			if r, ok := x.(*Ref); ok {
				r.Parts = append(r.Parts, f)
				continue
			}
			p.fail("", "a field of an expression that is not a column is not supported")
		default:
			return x
		}
	}
}

// intervalUnits are the units of INTERVAL literals.
var intervalUnits = []string{"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "YEARS", "MONTHS", "DAYS", "HOURS", "MINUTES", "SECONDS", "MILLISECONDS"}

func (p *parser) primary() Expr {
	t := p.tok
	switch t.kind {
	case tNumber:
		p.next()
		return &Lit{Pos: t.pos, Kind: "number", Text: t.text}
	case tString:
		p.next()
		return &Lit{Pos: t.pos, Kind: "string", Text: t.text}
	case tPlaceholder:
		p.fail("", "an unfilled placeholder")
	case tOp:
		if t.op("(") {
			p.next()
			if p.tok.is("SELECT") || p.tok.is("WITH") {
				q := p.query()
				p.expectOp(")", ") after the subquery")
				return &SubqueryExpr{Pos: t.pos, Query: q}
			}
			// Parentheses only group: the tree keeps no trace of them
			// (Format writes what grouping needs).
			x := p.expr()
			p.expectOp(")", ") to close (")
			return x
		}
		p.fail("", "expected an expression, found %s", describe(t))
	case tQuoted:
		return p.refOrCall()
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "NULL", "TRUE", "FALSE":
			p.next()
			return &Lit{Pos: t.pos, Kind: strings.ToLower(t.text)}
		case "INTERVAL":
			p.next()
			iv := &Interval{Pos: t.pos}
			neg := ""
			if p.tok.op("-") {
				p.next()
				neg = "-"
			}
			switch p.tok.kind {
			case tString:
				iv.Value, _ = p.str("")
			case tNumber:
				iv.Value = p.next().text
			default:
				p.fail("write INTERVAL '5' MINUTE", "expected the interval's amount, found %s", describe(p.tok))
			}
			iv.Value = neg + iv.Value
			iv.Unit = p.unit()
			if p.keyword("TO") {
				iv.To = p.unit()
			}
			return iv
		case "CASE":
			return p.caseExpr()
		case "CAST", "TRY_CAST":
			p.next()
			p.expectOp("(", "( after CAST")
			c := &Cast{Pos: t.pos, X: p.expr(), Try: strings.EqualFold(t.text, "TRY_CAST")}
			p.expect("AS", "AS and the type in CAST")
			c.Type = p.typ()
			p.expectOp(")", ") after CAST's type")
			return c
		case "TIMESTAMP", "DATE", "TIME", "TIMESTAMP_LTZ":
			if nt := p.peek(); nt.kind == tString {
				p.next()
				s, _ := p.str("")
				return &TypedLit{Pos: t.pos, Type: strings.ToUpper(t.text), Text: s}
			}
		case "TABLE":
			p.next()
			ta := &TableArg{Pos: t.pos, Name: p.name("a table after TABLE")}
			if p.keywords("PARTITION", "BY") {
				// One column, or several in parentheses.
				if p.tok.op("(") {
					p.next()
					ta.PartitionBy = p.identList("a column to partition by")
					p.expectOp(")", ") after the columns to partition by")
				} else {
					ta.PartitionBy = []Ident{p.ident("a column to partition by")}
				}
			}
			return ta
		case "DESCRIPTOR":
			if p.peek().op("(") {
				p.next()
				p.next()
				d := &Descriptor{Pos: t.pos, Columns: p.identList("a column")}
				p.expectOp(")", ") after DESCRIPTOR's columns")
				return d
			}
		case "EXISTS":
			p.fail("", "EXISTS (subqueries) is not supported")
		}
		if isReserved(t) && !(keywordCall(t.text) && p.peek().op("(")) {
			p.fail("quote it with backquotes (`"+t.text+"`) to use the keyword as a name", "expected an expression, found the keyword %s", strings.ToUpper(t.text))
		}
		return p.refOrCall()
	}
	p.fail("", "expected an expression, found %s", describe(t))
	return nil
}

func (p *parser) unit() string {
	u := strings.ToUpper(p.tok.text)
	if p.tok.kind != tIdent || !slices.Contains(intervalUnits, u) {
		hint := "use SECOND, MINUTE, HOUR, DAY, MONTH or YEAR"
		if p.tok.kind == tIdent {
			hint = suggest.Or(u, intervalUnits, hint)
		}
		p.fail(hint, "expected the interval's unit, found %s", describe(p.tok))
	}
	p.next()
	if p.tok.op("(") && p.peek().kind == tNumber {
		// A leading precision (HOUR(3)) bounds the amount's digits in
		// Flink; weir's amounts are not bounded, so it is read and left.
		p.next()
		p.next()
		p.expectOp(")", ") after the unit's precision")
	}
	return strings.TrimSuffix(u, "S")
}

func (p *parser) caseExpr() Expr {
	t := p.next()
	c := &Case{Pos: t.pos}
	if !p.tok.is("WHEN") {
		c.Operand = p.expr()
	}
	for p.keyword("WHEN") {
		w := When{Cond: p.expr()}
		p.expect("THEN", "THEN after WHEN's condition")
		w.Result = p.expr()
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.fail("", "expected WHEN in CASE, found %s", describe(p.tok))
	}
	if p.keyword("ELSE") {
		c.Else = p.expr()
	}
	p.expect("END", "END to close CASE")
	return c
}

// extractUnits are the units EXTRACT(unit FROM x) takes, with the
// functions that compute them.
var extractUnits = map[string]string{"YEAR": "YEAR", "QUARTER": "QUARTER", "MONTH": "MONTH", "WEEK": "WEEK", "DOY": "DAYOFYEAR", "DAY": "DAYOFMONTH",
	"DOW": "DAYOFWEEK", "HOUR": "HOUR", "MINUTE": "MINUTE", "SECOND": "SECOND"}

// refOrCall reads a column reference (a.b.c) or a function call
// (name(args) [OVER (...)]).
func (p *parser) refOrCall() Expr {
	first := p.tok
	var parts []Ident
	if first.kind == tQuoted {
		p.next()
		parts = []Ident{{Pos: first.pos, Name: first.text, Quoted: true}}
	} else {
		p.next()
		parts = []Ident{{Pos: first.pos, Name: first.text}}
	}
	for p.tok.op(".") && (p.peek().kind == tIdent || p.peek().kind == tQuoted) {
		p.next()
		t := p.next()
		parts = append(parts, Ident{Pos: t.pos, Name: t.text, Quoted: t.kind == tQuoted})
	}
	if !p.tok.op("(") {
		return &Ref{Parts: parts}
	}
	p.next()
	c := &Call{Pos: first.pos, Name: Name{Parts: parts}}
	switch {
	case p.tok.op("*"):
		p.next()
		c.Star = true
	case p.tok.op(")"):
	default:
		fn := strings.ToUpper(parts[len(parts)-1].Name)
		if fn == "POSITION" && len(parts) == 1 {
			// POSITION(needle IN s) is LOCATE(needle, s).
			needle := p.concat()
			if !p.keyword("IN") {
				p.fail("write POSITION(needle IN s)", "expected IN in POSITION, found %s", describe(p.tok))
			}
			s := p.expr()
			p.expectOp(")", ") after POSITION's string")
			c.Name = Name{Parts: []Ident{{Pos: first.pos, Name: "LOCATE"}}}
			c.Args = []Arg{{Value: needle}, {Value: s}}
			return c
		}
		if fn == "IFNULL" && len(parts) == 1 {
			// IFNULL(a, b) is COALESCE(a, b).
			c.Name = Name{Parts: []Ident{{Pos: first.pos, Name: "COALESCE"}}}
		}
		if fn == "TRIM" && len(parts) == 1 {
			// TRIM([BOTH | LEADING | TRAILING] [chars] FROM s) is
			// TRIM(s, chars), LTRIM or RTRIM: chars (default a space) cut
			// from both ends, the start or the end.
			name := "TRIM"
			mode := p.tok.is("BOTH") || p.tok.is("LEADING") || p.tok.is("TRAILING")
			if mode {
				name = map[string]string{"BOTH": "TRIM", "LEADING": "LTRIM", "TRAILING": "RTRIM"}[strings.ToUpper(p.tok.text)]
				p.next()
			}
			var chars Expr
			if !p.tok.is("FROM") {
				chars = p.expr()
			}
			if mode || p.tok.is("FROM") {
				if !p.keyword("FROM") {
					p.fail("write TRIM(BOTH 'x' FROM s)", "expected FROM in TRIM, found %s", describe(p.tok))
				}
				if chars == nil {
					chars = &Lit{Pos: p.tok.pos, Kind: "string", Text: " "}
				}
				s := p.expr()
				p.expectOp(")", ") after TRIM's value")
				return &Call{Pos: first.pos, Name: Name{Parts: []Ident{{Pos: first.pos, Name: name}}}, Args: []Arg{{Value: s}, {Value: chars}}}
			}
			// TRIM(s [, chars]): a call.
			c.Args = append(c.Args, Arg{Value: chars})
			if p.tok.op(",") {
				p.next()
				c.Args = append(c.Args, Arg{Value: p.expr()})
			}
			p.expectOp(")", ", or ) in the call of TRIM")
			return c
		}
		if (fn == "SUBSTRING" || fn == "SUBSTR") && len(parts) == 1 {
			// SUBSTRING(s FROM start [FOR length]) is SUBSTRING(s, start
			// [, length]).
			c.Args = append(c.Args, Arg{Value: p.expr()})
			if p.keyword("FROM") {
				c.Args = append(c.Args, Arg{Value: p.expr()})
				if p.keyword("FOR") {
					c.Args = append(c.Args, Arg{Value: p.expr()})
				}
				p.expectOp(")", "FOR or ) in SUBSTRING(s FROM start FOR length)")
				return c
			}
			for p.tok.op(",") {
				p.next()
				c.Args = append(c.Args, Arg{Value: p.expr()})
			}
			p.expectOp(")", ", or ) in the call of "+parts[0].Name)
			return c
		}
		if fn == "EXTRACT" && len(parts) == 1 && p.tok.kind == tIdent && p.peek().is("FROM") {
			// EXTRACT(unit FROM x) is unit's function of x, as Flink
			// reads it: EXTRACT(MINUTE FROM ts) is MINUTE(ts).
			unit := p.tok
			f, ok := extractUnits[strings.ToUpper(unit.text)]
			if !ok {
				p.fail("extract YEAR, QUARTER, MONTH, WEEK, DOY, DAY, DOW, HOUR, MINUTE or SECOND", "EXTRACT(%s FROM ...) is not supported yet", strings.ToUpper(unit.text))
			}
			p.next()
			p.next()
			x := p.expr()
			p.expectOp(")", ") after EXTRACT's value")
			return &Call{Pos: first.pos, Name: Name{Parts: []Ident{{Pos: first.pos, Name: f}}}, Args: []Arg{{Value: x}}}
		}
		if fn == "TIMESTAMPADD" && p.tok.kind == tIdent && p.peek().op(",") {
			p.fail("move the time by an INTERVAL instead, such as ts + INTERVAL '5' SECOND", "%s is not supported yet", fn)
		}
		if fn == "TIMESTAMPDIFF" && p.tok.kind == tIdent && p.peek().op(",") {
			// TIMESTAMPDIFF(unit, a, b): its unit as a string argument.
			u := p.tok
			unit := p.unit()
			c.Args = append(c.Args, Arg{Value: &Lit{Pos: u.pos, Kind: "string", Text: unit}})
			p.expectOp(",", ", after TIMESTAMPDIFF's unit")
		}
		if p.keyword("DISTINCT") {
			c.Distinct = true
		} else {
			p.keyword("ALL")
		}
		for {
			var a Arg
			if (p.tok.kind == tIdent || p.tok.kind == tQuoted) && p.peek().op("=>") {
				a.Name = p.ident("an argument name")
				p.next()
			}
			a.Value = p.expr()
			c.Args = append(c.Args, a)
			if (fn == "FLOOR" || fn == "CEIL" || fn == "CEILING") && p.keyword("TO") {
				// FLOOR(t TO unit): its unit as a string argument.
				u := p.tok
				c.Args = append(c.Args, Arg{Value: &Lit{Pos: u.pos, Kind: "string", Text: p.unit()}})
				break
			}
			if !p.tok.op(",") {
				break
			}
			p.next()
		}
		if (p.tok.is("RESPECT") || p.tok.is("IGNORE")) && p.peek().is("NULLS") {
			c.Nulls = strings.ToUpper(p.tok.text)
			p.next()
			p.next()
		}
		if fn == "IFNULL" && len(parts) == 1 && len(c.Args) != 2 {
			// Flink's IFNULL takes a value and its replacement.
			p.fail("write IFNULL(value, replacement), or COALESCE(a, b, ...) for more", "IFNULL takes 2 arguments, found %d", len(c.Args))
		}
	}
	p.expectOp(")", ", or ) in the call of "+parts[len(parts)-1].Name)
	if p.tok.is("FILTER") {
		p.next()
		if !p.tok.op("(") {
			p.fail("write FILTER (WHERE condition); FILTER is reserved, as in Flink: write a name FILTER as `FILTER`", "expected ( after FILTER, found %s", describe(p.tok))
		}
		p.next()
		if !p.keyword("WHERE") {
			p.fail("write FILTER (WHERE condition)", "WHERE after FILTER (")
		}
		c.Filter = p.expr()
		p.expectOp(")", ") after FILTER's condition")
	}
	if p.keyword("OVER") {
		p.expectOp("(", "( after OVER")
		o := &Over{}
		if p.keywords("PARTITION", "BY") {
			for {
				o.PartitionBy = append(o.PartitionBy, p.expr())
				if !p.tok.op(",") {
					break
				}
				p.next()
			}
		}
		if p.keywords("ORDER", "BY") {
			o.OrderBy = p.orderItems()
		}
		if p.tok.is("ROWS") || p.tok.is("RANGE") {
			p.fail("", "window frames (ROWS/RANGE BETWEEN) are not supported")
		}
		p.expectOp(")", ") after OVER's window")
		c.Over = o
	}
	return c
}
