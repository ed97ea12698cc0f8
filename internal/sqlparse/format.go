package sqlparse

import (
	"strconv"
	"strings"
)

// Format writes a script back as SQL: keywords in upper case, names
// quoted where they must be, one statement per line. Parse(Format(s))
// gives s again, positions aside.
func Format(s *Script) string {
	var b strings.Builder
	for _, st := range s.Stmts {
		formatStmt(&b, st)
		b.WriteString(";\n")
	}
	return b.String()
}

func formatStmt(b *strings.Builder, st Stmt) {
	switch st := st.(type) {
	case *Set:
		b.WriteString("SET " + quoteString(st.Key) + " = " + quoteString(st.Value))
	case *CreateTable:
		b.WriteString(createPrefix("TABLE", st.Temporary, st.IfNotExists) + formatName(st.Name) + " (")
		var parts []string
		for _, c := range st.Columns {
			parts = append(parts, formatColumn(c))
		}
		if w := st.Watermark; w != nil {
			parts = append(parts, "WATERMARK FOR "+formatIdent(w.Column)+" AS "+FormatExpr(w.Expr))
		}
		if pk := st.PrimaryKey; pk != nil {
			s := ""
			if pk.Constraint.Name != "" {
				s = "CONSTRAINT " + formatIdent(pk.Constraint) + " "
			}
			parts = append(parts, s+"PRIMARY KEY ("+formatIdents(pk.Columns)+") NOT ENFORCED")
		}
		b.WriteString(strings.Join(parts, ", ") + ")")
		if st.Options != nil {
			b.WriteString(" WITH (")
			for i, o := range st.Options {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(quoteString(o.Key) + " = " + quoteString(o.Value))
			}
			b.WriteString(")")
		}
	case *CreateView:
		b.WriteString(createPrefix("VIEW", st.Temporary, st.IfNotExists) + formatName(st.Name))
		if st.Columns != nil {
			b.WriteString(" (" + formatIdents(st.Columns) + ")")
		}
		b.WriteString(" AS ")
		formatQuery(b, st.Query)
	case *Insert:
		formatInsert(b, st)
	case *StatementSet:
		b.WriteString("EXECUTE STATEMENT SET BEGIN ")
		for _, in := range st.Inserts {
			formatInsert(b, in)
			b.WriteString("; ")
		}
		b.WriteString("END")
	case *QueryStmt:
		formatQuery(b, st.Query)
	}
}

// createPrefix is CREATE [TEMPORARY] what [IF NOT EXISTS], and a space.
func createPrefix(what string, temp, ifNotExists bool) string {
	s := "CREATE "
	if temp {
		s += "TEMPORARY "
	}
	s += what + " "
	if ifNotExists {
		s += "IF NOT EXISTS "
	}
	return s
}

func formatInsert(b *strings.Builder, in *Insert) {
	b.WriteString("INSERT INTO " + formatName(in.Table))
	if in.Hint != nil {
		b.WriteString(" /*+" + in.Hint.Text + "*/")
	}
	if in.Columns != nil {
		b.WriteString(" (" + formatIdents(in.Columns) + ")")
	}
	b.WriteString(" ")
	formatQuery(b, in.Query)
}

func formatColumn(c *Column) string {
	s := formatIdent(c.Name)
	if c.Computed != nil {
		s += " AS " + FormatExpr(c.Computed)
	} else {
		s += " " + FormatType(c.Type)
		if c.Metadata {
			s += " METADATA"
			if c.MetadataKey != "" {
				s += " FROM " + quoteString(c.MetadataKey)
			}
			if c.Virtual {
				s += " VIRTUAL"
			}
		}
	}
	if c.Comment != "" {
		s += " COMMENT " + quoteString(c.Comment)
	}
	return s
}

// FormatType writes a type.
func FormatType(t *Type) string {
	s := t.Name
	switch t.Name {
	case "ROW":
		var fs []string
		for _, f := range t.Fields {
			x := formatIdent(f.Name) + " " + FormatType(f.Type)
			if f.Comment != "" {
				x += " " + quoteString(f.Comment)
			}
			fs = append(fs, x)
		}
		s += "<" + strings.Join(fs, ", ") + ">"
	case "ARRAY", "MULTISET", "MAP":
		var es []string
		for _, e := range t.Elems {
			es = append(es, FormatType(e))
		}
		s += "<" + strings.Join(es, ", ") + ">"
	}
	if t.Params != nil {
		ps := make([]string, len(t.Params))
		for i, p := range t.Params {
			ps[i] = strconv.Itoa(p)
		}
		s += "(" + strings.Join(ps, ", ") + ")"
	}
	if t.LocalTZ {
		s += " WITH LOCAL TIME ZONE"
	}
	if t.NotNull {
		s += " NOT NULL"
	}
	return s
}

func formatQuery(b *strings.Builder, q *Query) {
	if q.With != nil {
		b.WriteString("WITH ")
		for i, c := range q.With {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatIdent(c.Name) + " AS (")
			formatQuery(b, c.Query)
			b.WriteString(")")
		}
		b.WriteString(" ")
	}
	for i, s := range q.Selects {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		formatSelect(b, s)
	}
	if q.OrderBy != nil {
		b.WriteString(" ORDER BY " + formatOrder(q.OrderBy))
	}
	if q.Limit != nil {
		b.WriteString(" LIMIT " + FormatExpr(q.Limit))
	}
}

func formatOrder(items []*OrderItem) string {
	var s []string
	for _, it := range items {
		x := FormatExpr(it.Expr)
		if it.Desc {
			x += " DESC"
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

func formatSelect(b *strings.Builder, s *Select) {
	b.WriteString("SELECT ")
	if s.Hint != nil {
		b.WriteString("/*+" + s.Hint.Text + "*/ ")
	}
	if s.Distinct {
		b.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case it.Star && it.Expr != nil:
			b.WriteString(FormatExpr(it.Expr) + ".*")
		case it.Star:
			b.WriteString("*")
		default:
			b.WriteString(FormatExpr(it.Expr))
			if it.Alias.Name != "" {
				b.WriteString(" AS " + formatIdent(it.Alias))
			}
		}
	}
	if s.From != nil {
		b.WriteString(" FROM ")
		formatFrom(b, s.From)
	}
	if s.Where != nil {
		b.WriteString(" WHERE " + FormatExpr(s.Where))
	}
	if s.GroupBy != nil {
		var g []string
		for _, e := range s.GroupBy {
			g = append(g, FormatExpr(e))
		}
		b.WriteString(" GROUP BY " + strings.Join(g, ", "))
	}
	if s.Having != nil {
		b.WriteString(" HAVING " + FormatExpr(s.Having))
	}
}

func formatAlias(a Ident) string {
	if a.Name == "" {
		return ""
	}
	return " AS " + formatIdent(a)
}

func formatFrom(b *strings.Builder, f From) {
	switch f := f.(type) {
	case *TableRef:
		b.WriteString(formatName(f.Name))
		if f.Hint != nil {
			b.WriteString(" /*+" + f.Hint.Text + "*/")
		}
		b.WriteString(formatAlias(f.Alias))
	case *TableFunc:
		b.WriteString("TABLE(" + FormatExpr(f.Call) + ")" + formatAlias(f.Alias))
	case *Subquery:
		b.WriteString("(")
		formatQuery(b, f.Query)
		b.WriteString(")" + formatAlias(f.Alias))
	case *Join:
		formatFrom(b, f.Left)
		if f.Type == CommaJoin {
			b.WriteString(", ")
		} else {
			b.WriteString(" " + string(f.Type) + " ")
		}
		if _, nested := f.Right.(*Join); nested {
			b.WriteString("(")
			formatFrom(b, f.Right)
			b.WriteString(")")
		} else {
			formatFrom(b, f.Right)
		}
		if f.On != nil {
			b.WriteString(" ON " + FormatExpr(f.On))
		}
	}
}

// FormatExpr writes an expression, parenthesizing every compound operand
// so that the text parses back to the same tree.
func FormatExpr(e Expr) string {
	switch e := e.(type) {
	case *Lit:
		switch e.Kind {
		case "string":
			return quoteString(e.Text)
		case "number":
			return e.Text
		}
		return strings.ToUpper(e.Kind)
	case *TypedLit:
		return e.Type + " " + quoteString(e.Text)
	case *Interval:
		s := "INTERVAL " + quoteString(e.Value) + " " + e.Unit
		if e.To != "" {
			s += " TO " + e.To
		}
		return s
	case *Ref:
		return formatIdents(e.Parts, ".")
	case *Unary:
		if e.Op == "NOT" {
			return "NOT " + operand(e.X)
		}
		return e.Op + operand(e.X)
	case *Binary:
		return operand(e.X) + " " + e.Op + " " + operand(e.Y)
	case *IsNull:
		s := operand(e.X) + " IS "
		if e.Not {
			s += "NOT "
		}
		return s + e.What
	case *Between:
		not := ""
		if e.Not {
			not = "NOT "
		}
		return operand(e.X) + " " + not + "BETWEEN " + operand(e.Lo) + " AND " + operand(e.Hi)
	case *In:
		not := ""
		if e.Not {
			not = "NOT "
		}
		var l []string
		for _, x := range e.List {
			l = append(l, FormatExpr(x))
		}
		return operand(e.X) + " " + not + "IN (" + strings.Join(l, ", ") + ")"
	case *Case:
		s := "CASE"
		if e.Operand != nil {
			s += " " + FormatExpr(e.Operand)
		}
		for _, w := range e.Whens {
			s += " WHEN " + FormatExpr(w.Cond) + " THEN " + FormatExpr(w.Result)
		}
		if e.Else != nil {
			s += " ELSE " + FormatExpr(e.Else)
		}
		return s + " END"
	case *Cast:
		fn := "CAST"
		if e.Try {
			fn = "TRY_CAST"
		}
		return fn + "(" + FormatExpr(e.X) + " AS " + FormatType(e.Type) + ")"
	case *Call:
		s := formatName(e.Name) + "("
		if n := e.Name.Parts; len(n) == 1 && !n[0].Quoted && keywordCall(n[0].Name) {
			s = strings.ToUpper(n[0].Name) + "(" // LEFT(s, 2): a keyword as a function
		}
		switch {
		case e.Star:
			s += "*"
		default:
			if e.Distinct {
				s += "DISTINCT "
			}
			for i, a := range e.Args {
				if i > 0 {
					s += ", "
				}
				if a.Name.Name != "" {
					s += formatIdent(a.Name) + " => "
				}
				s += FormatExpr(a.Value)
			}
			if e.Nulls != "" {
				s += " " + e.Nulls + " NULLS"
			}
		}
		s += ")"
		if e.Filter != nil {
			s += " FILTER (WHERE " + FormatExpr(e.Filter) + ")"
		}
		if o := e.Over; o != nil {
			var parts []string
			if o.PartitionBy != nil {
				var ps []string
				for _, x := range o.PartitionBy {
					ps = append(ps, FormatExpr(x))
				}
				parts = append(parts, "PARTITION BY "+strings.Join(ps, ", "))
			}
			if o.OrderBy != nil {
				parts = append(parts, "ORDER BY "+formatOrder(o.OrderBy))
			}
			s += " OVER (" + strings.Join(parts, " ") + ")"
		}
		return s
	case *TableArg:
		s := "TABLE " + formatName(e.Name)
		switch len(e.PartitionBy) {
		case 0:
		case 1:
			s += " PARTITION BY " + formatIdent(e.PartitionBy[0])
		default:
			s += " PARTITION BY (" + formatIdents(e.PartitionBy) + ")"
		}
		return s
	case *Descriptor:
		return "DESCRIPTOR(" + formatIdents(e.Columns) + ")"
	case *SubqueryExpr:
		var b strings.Builder
		b.WriteString("(")
		formatQuery(&b, e.Query)
		b.WriteString(")")
		return b.String()
	case *Index:
		return operand(e.X) + "[" + FormatExpr(e.I) + "]"
	}
	return "?"
}

// operand writes an operand of an operator, in parentheses when it is
// compound (the parser keeps no parentheses: they only group).
func operand(e Expr) string {
	switch e.(type) {
	case *Binary, *Unary, *IsNull, *Between, *In:
		return "(" + FormatExpr(e) + ")"
	}
	return FormatExpr(e)
}

func formatName(n Name) string { return formatIdents(n.Parts, ".") }

func formatIdents(ids []Ident, sep ...string) string {
	s := ", "
	if len(sep) > 0 {
		s = sep[0]
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = formatIdent(id)
	}
	return strings.Join(parts, s)
}

// formatIdent writes a name, in backquotes when it was quoted or must be
// (a keyword, or characters a name cannot have).
func formatIdent(id Ident) string {
	if id.Quoted || !plainIdent(id.Name) {
		return "`" + strings.ReplaceAll(id.Name, "`", "``") + "`"
	}
	return id.Name
}

func plainIdent(s string) bool {
	if s == "" || reserved[strings.ToUpper(s)] {
		return false
	}
	for i, r := range s {
		if i == 0 && !isIdentStart(r) || !isIdentRune(r) {
			return false
		}
	}
	return true
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
