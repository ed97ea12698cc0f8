package sqlparse

// Script is a parsed file: its statements in order.
type Script struct {
	Stmts []Stmt
}

// Stmt is a statement: *Set, *CreateTable, *CreateView, *Insert,
// *StatementSet or *QueryStmt.
type Stmt interface{ stmt() }

// Set is SET 'key' = 'value'.
type Set struct {
	Pos        Pos
	Key, Value string
}

// CreateTable is CREATE TABLE with its columns, watermark, primary key
// and WITH options.
type CreateTable struct {
	Pos         Pos
	Temporary   bool
	IfNotExists bool
	Name        Name
	Columns     []*Column
	Watermark   *Watermark // nil: none
	PrimaryKey  *PrimaryKey
	Options     []Option
}

// Column is a physical, metadata or computed column.
type Column struct {
	Pos  Pos
	Name Ident
	// Type is the type of a physical or metadata column (nil for a
	// computed one).
	Type *Type
	// Computed is a computed column's expression (x AS expr).
	Computed Expr
	// Metadata: a METADATA column, read from FROM 'key' (MetadataKey,
	// "" when it is the column's name); Virtual: not written to sinks.
	Metadata    bool
	MetadataKey string
	Virtual     bool
	NotNull     bool
	Comment     string
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	Pos    Pos
	Column Ident
	Expr   Expr
}

// PrimaryKey is PRIMARY KEY (columns) NOT ENFORCED.
type PrimaryKey struct {
	Pos        Pos
	Constraint Ident // CONSTRAINT name ("" when unnamed)
	Columns    []Ident
}

// Option is one 'key' = 'value' of a WITH clause.
type Option struct {
	Pos        Pos
	Key, Value string
}

// CreateView is CREATE VIEW name AS query.
type CreateView struct {
	Pos         Pos
	Temporary   bool
	IfNotExists bool
	Name        Name
	Columns     []Ident
	Query       *Query
}

// Insert is INSERT INTO table [(columns)] query.
type Insert struct {
	Pos     Pos
	Table   Name
	Hint    *Hint
	Columns []Ident
	Query   *Query
}

// StatementSet is EXECUTE STATEMENT SET BEGIN inserts END (or BEGIN
// STATEMENT SET; inserts END).
type StatementSet struct {
	Pos     Pos
	Inserts []*Insert
}

// QueryStmt is a bare query.
type QueryStmt struct {
	Query *Query
}

func (*Set) stmt()          {}
func (*CreateTable) stmt()  {}
func (*CreateView) stmt()   {}
func (*Insert) stmt()       {}
func (*StatementSet) stmt() {}
func (*QueryStmt) stmt()    {}

// Ident is a name as written: Quoted when it was in backquotes (Flink
// compares names case-sensitively either way).
type Ident struct {
	Pos    Pos
	Name   string
	Quoted bool
}

// Name is a possibly qualified name (catalog.db.table).
type Name struct {
	Parts []Ident
}

// Pos is where the name starts.
func (n Name) Pos() Pos {
	if len(n.Parts) == 0 {
		return Pos{}
	}
	return n.Parts[0].Pos
}

// Hint is a /*+ ... */ comment: its text as written.
type Hint struct {
	Pos  Pos
	Text string
}

// Type is a SQL type: Name (upper case, such as BIGINT, VARCHAR,
// DECIMAL, TIMESTAMP, TIMESTAMP_LTZ, ROW, ARRAY, MAP) with its
// parameters (precision and scale), fields (ROW), elements (ARRAY: one;
// MAP: two).
type Type struct {
	Pos     Pos
	Name    string
	Params  []int
	Fields  []*Column // ROW's: Name and Type
	Elems   []*Type
	NotNull bool
	// LocalTZ: TIMESTAMP(p) WITH LOCAL TIME ZONE.
	LocalTZ bool
}

// Query is a SELECT, or a UNION ALL of them, with a WITH clause.
type Query struct {
	Pos     Pos
	With    []*CTE
	Selects []*Select // more than one: UNION ALL
	OrderBy []*OrderItem
	Limit   Expr
}

// CTE is one name AS (query) of a WITH clause.
type CTE struct {
	Name  Ident
	Query *Query
}

// Select is one SELECT.
type Select struct {
	Pos      Pos
	Hint     *Hint
	Distinct bool
	Items    []*SelectItem
	From     From // nil: none
	Where    Expr
	GroupBy  []Expr
	Having   Expr
}

// SelectItem is expr [AS alias], or * / t.* (Star, with Expr the
// qualifier, nil for *).
type SelectItem struct {
	Pos   Pos
	Expr  Expr
	Alias Ident
	Star  bool
}

// OrderItem is expr [ASC|DESC].
type OrderItem struct {
	Expr Expr
	Desc bool
}

// From is a FROM item: *TableRef, *TableFunc, *Subquery or *Join.
type From interface{ from() }

// TableRef is a table or view by name.
type TableRef struct {
	Name  Name
	Hint  *Hint
	Alias Ident
}

// TableFunc is TABLE(fn(args)): a window table function.
type TableFunc struct {
	Pos   Pos
	Call  *Call
	Alias Ident
}

// Subquery is (query) AS alias.
type Subquery struct {
	Pos   Pos
	Query *Query
	Alias Ident
}

// JoinType is INNER, LEFT, RIGHT, FULL or CROSS.
type JoinType string

// The join types.
const (
	InnerJoin JoinType = "JOIN"
	LeftJoin  JoinType = "LEFT JOIN"
	RightJoin JoinType = "RIGHT JOIN"
	FullJoin  JoinType = "FULL JOIN"
	CrossJoin JoinType = "CROSS JOIN"
	// CommaJoin is FROM a, b.
	CommaJoin JoinType = ","
)

// Join joins Left and Right On a condition (nil for CROSS and comma
// joins).
type Join struct {
	Pos         Pos
	Type        JoinType
	Left, Right From
	On          Expr
}

func (*TableRef) from()  {}
func (*TableFunc) from() {}
func (*Subquery) from()  {}
func (*Join) from()      {}

// Expr is an expression.
type Expr interface{ exprPos() Pos }

// PosOf is where x starts.
func PosOf(x Expr) Pos { return x.exprPos() }

// Lit is a literal: Kind is "number", "string", "true", "false" or
// "null"; Text is the number as written or the string's value.
type Lit struct {
	Pos  Pos
	Kind string
	Text string
}

// TypedLit is TIMESTAMP '...', DATE '...' or TIME '...'.
type TypedLit struct {
	Pos  Pos
	Type string
	Text string
}

// Interval is INTERVAL 'n' unit [TO unit2] (Value as written in the
// string, units upper case).
type Interval struct {
	Pos      Pos
	Value    string
	Unit, To string
}

// Ref is a column reference, possibly qualified (t.col) or a path into a
// ROW (person.name).
type Ref struct {
	Parts []Ident
}

// Unary is NOT x, -x or +x.
type Unary struct {
	Pos Pos
	Op  string
	X   Expr
}

// Binary is x op y: OR, AND, =, <>, <, <=, >, >=, +, -, *, /, %, ||,
// LIKE, NOT LIKE.
type Binary struct {
	Pos  Pos
	Op   string
	X, Y Expr
}

// IsNull is x IS [NOT] NULL (also IS [NOT] TRUE/FALSE: What).
type IsNull struct {
	Pos  Pos
	X    Expr
	Not  bool
	What string // NULL, TRUE, FALSE
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	Pos       Pos
	X, Lo, Hi Expr
	Not       bool
}

// In is x [NOT] IN (list).
type In struct {
	Pos  Pos
	X    Expr
	List []Expr
	Not  bool
}

// Case is CASE [operand] WHEN .. THEN .. [ELSE ..] END.
type Case struct {
	Pos     Pos
	Operand Expr
	Whens   []When
	Else    Expr
}

// When is one WHEN cond THEN result.
type When struct {
	Cond, Result Expr
}

// Cast is CAST(x AS type) or TRY_CAST.
type Cast struct {
	Pos  Pos
	X    Expr
	Type *Type
	Try  bool
}

// Call is a function call: name(args), with DISTINCT, COUNT(*) (Star),
// named arguments, an aggregate's FILTER (WHERE ...) and OVER.
type Call struct {
	Pos      Pos
	Name     Name
	Distinct bool
	Star     bool
	Args     []Arg
	// Nulls is an aggregate's RESPECT NULLS or IGNORE NULLS ("RESPECT",
	// "IGNORE"; "": neither).
	Nulls string
	// Filter is an aggregate's FILTER (WHERE condition), or nil.
	Filter Expr
	Over   *Over
}

// Arg is a call's argument: Name => Value for a named one.
type Arg struct {
	Name  Ident
	Value Expr
}

// Over is OVER (PARTITION BY .. ORDER BY ..).
type Over struct {
	PartitionBy []Expr
	OrderBy     []*OrderItem
}

// TableArg is TABLE name [PARTITION BY columns], an argument of a window
// table function (SESSION's PARTITION BY).
type TableArg struct {
	Pos         Pos
	Name        Name
	PartitionBy []Ident
}

// Descriptor is DESCRIPTOR(columns).
type Descriptor struct {
	Pos     Pos
	Columns []Ident
}

// SubqueryExpr is a (query) in an expression.
type SubqueryExpr struct {
	Pos   Pos
	Query *Query
}

// Index is x[i].
type Index struct {
	Pos  Pos
	X, I Expr
}

func (e *Lit) exprPos() Pos          { return e.Pos }
func (e *TypedLit) exprPos() Pos     { return e.Pos }
func (e *Interval) exprPos() Pos     { return e.Pos }
func (e *Ref) exprPos() Pos          { return e.Parts[0].Pos }
func (e *Unary) exprPos() Pos        { return e.Pos }
func (e *Binary) exprPos() Pos       { return e.Pos }
func (e *IsNull) exprPos() Pos       { return e.Pos }
func (e *Between) exprPos() Pos      { return e.Pos }
func (e *In) exprPos() Pos           { return e.Pos }
func (e *Case) exprPos() Pos         { return e.Pos }
func (e *Cast) exprPos() Pos         { return e.Pos }
func (e *Call) exprPos() Pos         { return e.Pos }
func (e *TableArg) exprPos() Pos     { return e.Pos }
func (e *Descriptor) exprPos() Pos   { return e.Pos }
func (e *SubqueryExpr) exprPos() Pos { return e.Pos }
func (e *Index) exprPos() Pos        { return e.Pos }

// ExprPos is where e starts.
func ExprPos(e Expr) Pos { return e.exprPos() }

// IsInterval reports whether x is an interval: an INTERVAL literal, one
// times or divided by a number (2 * INTERVAL '1' SECOND), or its
// negation. A time plus or minus one is a time.
func IsInterval(x Expr) bool {
	switch x := x.(type) {
	case *Interval:
		return true
	case *Binary:
		switch x.Op {
		case "*":
			return IsInterval(x.X) != IsInterval(x.Y)
		case "/":
			return IsInterval(x.X) && !IsInterval(x.Y)
		}
	case *Unary:
		return x.Op == "-" && IsInterval(x.X)
	}
	return false
}
