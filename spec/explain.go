package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/etime"
)

// Explain describes the plan's graph, one operator per line with what it
// reads and how it is set up: what weir explain prints.
func (p *Plan) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %q: %s time\n", p.Name, p.Time)
	dead := false // a node reads the dead letters
	for _, n := range p.Graph.Nodes {
		for _, e := range n.Inputs {
			dead = dead || e.Port == Dead
		}
	}
	for _, n := range p.Graph.Nodes {
		fmt.Fprintf(&b, "%d %s%s: %s\n", n.ID, n.Name, n.inputs(), describe1(p, n.Op, dead))
	}
	if k := p.Checkpoint; k != nil {
		fmt.Fprintf(&b, "checkpoints every %s in %s", durText(DurOr(k.Interval, etime.Duration(5_000))), k.Dir)
		if k.AfterFiring {
			b.WriteString(", and after each early or on-time firing")
		}
		if k.MinPause != nil && *k.MinPause > 0 {
			fmt.Fprintf(&b, ", at least %s apart", durText(etime.Duration(*k.MinPause)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// describe1 is one operator's settings, for Explain; dead says whether
// a sink keeps the dead letters.
func describe1(p *Plan, op Op, dead bool) string {
	d := durText
	// opt is ", label duration" when v is set.
	opt := func(label string, v etime.Duration) string {
		if v <= 0 {
			return ""
		}
		return ", " + label + " " + d(v)
	}
	switch op := op.(type) {
	case *SourceOp:
		s := op.Type
		switch c := op.Config; op.Type {
		case "file":
			s += " " + c.Path
		case "kafka":
			if c.Kafka != nil {
				s += fmt.Sprintf(" %s on %s", c.Kafka.Topic, strings.Join(c.Kafka.Brokers, ","))
			}
		case "nats":
			if c.NATS != nil {
				s += fmt.Sprintf(" stream %s on %s", c.NATS.Stream, c.NATS.URL)
			}
		}
		if p.Channels > 1 {
			s += fmt.Sprintf(", %d channels", p.Channels)
		}
		return s
	case *DecodeOp:
		s := string(op.Format)
		if op.TSField != "" {
			s += fmt.Sprintf(", event time from %s (%s)", op.TSField, op.TSUnit)
		}
		if op.Checks {
			s += ", timestamps checked, at most " + d(op.MaxFuture) + " ahead"
		}
		for _, f := range op.Decimals {
			s += fmt.Sprintf(", %s as DECIMAL(%d, %d)", f.Field, f.Precision, f.Scale)
		}
		for _, f := range op.Computed {
			s += fmt.Sprintf(", %s = %s", f.Name, f.Expr)
		}
		if op.Where != "" {
			s += ", where " + op.Where + " (the others filtered after the watermark)"
		}
		if !dead {
			return s + "; unreadable records counted as dead letters, not kept (no sinks.dead_letter)"
		}
		return s + "; unreadable records to dead"
	case *WatermarkOp:
		if op.Time != EventTime {
			return string(op.Time) + " time"
		}
		s := string(op.Type)
		if op.Bound > 0 {
			s += " " + d(op.Bound)
		}
		if op.Type != Punctuated {
			// What the watermark is, in the words of Flink SQL's
			// WATERMARK clause (which has no 1 ms of its own).
			s += " (the largest timestamp"
			if op.Bound >= 0 {
				s += " - " + d(op.Bound+1)
			}
			s += ")"
		}
		switch {
		case op.Type == Punctuated:
			s += ", from the input's watermark lines"
		case op.EveryRecord:
			s += ", after every record"
		default:
			s += ", every " + d(op.Interval)
		}
		if op.BacklogEvery > 0 {
			s += fmt.Sprintf(", every %d records of a backlog", op.BacklogEvery)
		}
		return s + opt("idle after", op.IdleTimeout) + opt("heartbeat", op.Heartbeat)
	case *WindowOp:
		s := op.Shape + fmt.Sprintf(" by [%s]", strings.Join(op.Key, ", ")) + op.TriggerShape
		s += opt("allowed lateness", op.Lateness) + opt("late firings at most every", op.LateFiringInterval)
		if op.TwoPhase {
			s += ", two-phase (pre-aggregated per key and window on each source subtask)"
		}
		if op.SkipUnchanged {
			s += ", unchanged early and late results skipped"
		}
		var aggs []string
		for _, a := range op.Aggregates {
			arg := a.Field
			if a.Type != "" {
				arg += " as " + a.Type
			}
			agg := fmt.Sprintf("%s = %s(%s)", a.Name, a.Fn, arg)
			if a.When != "" {
				agg += " when " + a.When
			}
			aggs = append(aggs, agg)
		}
		s += "; " + strings.Join(aggs, ", ")
		if op.Having != "" {
			s += "; having " + op.Having
		}
		return s
	case *JoinOp:
		var on, cols []string
		for _, o := range op.On {
			on = append(on, o.Left+" = "+o.Right)
		}
		for _, c := range op.Columns {
			side := "left"
			if c.Right {
				side = "right"
			}
			cols = append(cols, fmt.Sprintf("%s = %s %s", c.Name, side, c.Field))
		}
		s := fmt.Sprintf("%s join of the windows' results on the window", op.Type)
		if len(on) > 0 {
			s += " and " + strings.Join(on, ", ")
		}
		if r := op.Range; r != nil {
			off := func(d etime.Duration) string {
				switch {
				case d > 0:
					return " + " + d.Std().String()
				case d < 0:
					return " - " + (-d).Std().String()
				}
				return ""
			}
			s = fmt.Sprintf("%s join of the records with the window's results on %s, a record at %s%s to %s%s (both included) meeting the window",
				op.Type, strings.Join(on, ", "), r.Bound, off(r.Lo), r.Bound, off(r.Hi))
		}
		if op.Cond != "" {
			// The condition as written over its columns' sides.
			cond := op.Cond
			for _, c := range slices.Backward(op.CondCols) { // _weir_cond_10 before _weir_cond_1
				side := "left."
				if c.Right {
					side = "right."
				}
				cond = strings.ReplaceAll(cond, c.Name, side+c.Field)
			}
			s += " where " + cond
		}
		if len(cols) > 0 {
			s += "; " + strings.Join(cols, ", ")
		}
		if op.Where != "" {
			s += "; the rows where " + op.Where
		}
		return s
	case *SelectOp:
		return "every record as a row of " + strings.Join(op.Fields, ", ") + " (no window, no state)"
	case *TopNOp:
		var order []string
		for _, o := range op.OrderBy {
			dir := "asc"
			if o.Desc {
				dir = "desc"
			}
			order = append(order, o.Field+" "+dir)
		}
		return fmt.Sprintf("the %d first rows of each window by [%s] in order %s, ranked in %s", op.N, strings.Join(op.PartitionBy, ", "), strings.Join(order, ", "), op.Rank)
	case *SinkOp:
		c := op.Config
		s := c.Type
		switch {
		case c.Path != "":
			s += " " + c.Path
		case c.Dir != "":
			s += " " + c.Dir
		case c.Topic != "":
			s += " " + c.Topic
		case c.Subject != "":
			s += " " + c.Subject
		}
		if c.Table != "" {
			s += ", table " + c.Table
		}
		if c.Layout == LayoutDeclared {
			cols := make([]string, len(c.Columns))
			for i, col := range c.Columns {
				cols[i] = col.Name
				if col.Type != "" {
					cols[i] += " " + col.Type
				}
			}
			s += fmt.Sprintf(" of its declared columns (%s), upserted by (%s)", strings.Join(cols, ", "), strings.Join(c.PrimaryKey, ", "))
		}
		return s
	}
	return op.Kind()
}

// windowShape says how a spec gives the window ("sliding 1m every 10s",
// "cumulate 1h in steps of 10m",
// "session gap 30s offset 5s") and its trigger (", trigger count 100";
// "" for none), for explain.
func windowShape(w Window, t *Trigger) (shape, trig string) {
	dur := func(v *Duration) string { return durText(etime.Duration(*v)) }
	shape = w.Type
	switch {
	case w.Size != nil && w.Slide != nil:
		shape += " " + dur(w.Size) + " every " + dur(w.Slide)
	case w.Size != nil && w.Step != nil:
		shape += " " + dur(w.Size) + " in steps of " + dur(w.Step)
	case w.Size != nil:
		shape += " " + dur(w.Size)
	case w.Gap != nil:
		shape += " gap " + dur(w.Gap)
	}
	if w.Offset != nil && *w.Offset != 0 {
		shape += " offset " + dur(w.Offset)
	}
	if t != nil && t.Type != "" {
		trig = ", trigger " + t.Type
		if t.Interval != nil {
			trig += " " + dur(t.Interval)
		}
		if t.Count > 0 {
			trig += fmt.Sprint(" ", t.Count)
		}
	}
	return shape, trig
}

// durText is a duration as explain writes it (1m0s).
func durText(v etime.Duration) string { return (time.Duration(v) * time.Millisecond).String() }
