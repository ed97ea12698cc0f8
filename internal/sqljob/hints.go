package sqljob

import (
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
)

// hintOptions reads a hint /*+ OPTIONS('key' = 'value', ...) */ as
// SETs at the hint's place: the query's emit options on a SELECT, a
// table's dynamic options (which override its WITH options, as Flink's
// do) on a table in FROM.
func hintOptions(h *sqlparse.Hint) ([]*sqlparse.Set, error) {
	if h == nil {
		return nil, nil
	}
	bad := func() error {
		return errAt(h.Pos, "/*+"+h.Text+"*/", "write /*+ OPTIONS('key' = 'value', ...) */", "this hint is not one weir reads")
	}
	x, err := sqlparse.ParseExpr(strings.TrimSpace(h.Text))
	call, ok := x.(*sqlparse.Call)
	if err != nil || !ok || !strings.EqualFold(tableName(call.Name), "OPTIONS") {
		return nil, bad()
	}
	var sets []*sqlparse.Set
	for _, a := range call.Args {
		b, ok := a.Value.(*sqlparse.Binary)
		if !ok || b.Op != "=" {
			return nil, bad()
		}
		k, ok1 := b.X.(*sqlparse.Lit)
		v, ok2 := b.Y.(*sqlparse.Lit)
		if !ok1 || !ok2 || k.Kind != "string" || v.Kind != "string" {
			return nil, bad()
		}
		sets = append(sets, &sqlparse.Set{Pos: h.Pos, Key: k.Text, Value: v.Text})
	}
	return sets, nil
}

// queryHint applies a SELECT's hint: the emit options of the query
// (table.exec.emit.*), as its SETs would.
func (c *compiler) queryHint(h *sqlparse.Hint) error {
	sets, err := hintOptions(h)
	if err != nil {
		return err
	}
	for _, st := range sets {
		if !strings.HasPrefix(st.Key, "table.exec.emit.") {
			return errAt(st.Pos, st.Key, "a query's hint sets table.exec.emit.* options; SET the others", "%s is not an option of a query", st.Key)
		}
		if err := c.set(st); err != nil {
			return err
		}
	}
	return nil
}

// tableHint returns table t with a FROM hint's options over its WITH
// options.
func tableHint(t *sqlparse.CreateTable, h *sqlparse.Hint) (*sqlparse.CreateTable, error) {
	sets, err := hintOptions(h)
	if err != nil || len(sets) == 0 {
		return t, err
	}
	u := *t
	u.Options = nil
	over := map[string]bool{}
	for _, st := range sets {
		over[st.Key] = true
	}
	for _, o := range t.Options {
		if !over[o.Key] {
			u.Options = append(u.Options, o)
		}
	}
	for _, st := range sets {
		u.Options = append(u.Options, sqlparse.Option{Pos: st.Pos, Key: st.Key, Value: st.Value})
	}
	return &u, nil
}
