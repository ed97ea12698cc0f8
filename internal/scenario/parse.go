package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// call splits "name(a,b)" into name and args; "name" has no args.
func call(s string) (string, []string, error) {
	i := strings.IndexByte(s, '(')
	if i < 0 {
		return s, nil, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", nil, fmt.Errorf("unbalanced parentheses in %q", s)
	}
	inner := s[i+1 : len(s)-1]
	// split on top-level commas
	var args []string
	depth, start := 0, 0
	for j, c := range inner {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(inner[start:j]))
				start = j + 1
			}
		}
	}
	if strings.TrimSpace(inner) != "" {
		args = append(args, strings.TrimSpace(inner[start:]))
	}
	return s[:i], args, nil
}

// parseTime reads an int64 or min/max/-inf/+inf.
func parseTime(s string) (etime.Time, error) {
	switch s {
	case "max", "+inf", "MAX":
		return etime.MaxTime, nil
	case "min", "-inf", "MIN":
		return etime.MinTime, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return etime.Time(v), err
}

func parseDur(s string) (etime.Duration, error) {
	if s == "max" || s == "MAX" {
		return etime.Duration(math.MaxInt64), nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return etime.Duration(v), err
}

func durs(args []string, n int) ([]etime.Duration, error) {
	out := make([]etime.Duration, n)
	for i := range n {
		if i >= len(args) {
			break
		}
		d, err := parseDur(args[i])
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func parseAssigner(s string) (window.Assigner, error) {
	name, args, err := call(s)
	if err != nil {
		return nil, err
	}
	d, err := durs(args, 3)
	if err != nil {
		return nil, err
	}
	switch name {
	case "tumbling":
		return window.Tumbling(d[0], d[1])
	case "sliding":
		return window.Sliding(d[0], d[1], d[2])
	case "cumulate":
		return window.Cumulate(d[0], d[1], d[2])
	case "session":
		return window.Session(d[0])
	case "global":
		return window.GlobalWindows(), nil
	case "proc-tumbling":
		return window.TumblingProcessing(d[0], d[1])
	case "proc-sliding":
		return window.SlidingProcessing(d[0], d[1], d[2])
	case "proc-session":
		return window.SessionProcessing(d[0])
	}
	return nil, fmt.Errorf("unknown window %q", s)
}

func parseTrigger(s string) (trigger.Trigger, error) {
	name, args, err := call(s)
	if err != nil {
		return nil, err
	}
	switch name {
	case "event_time":
		return trigger.EventTime(), nil
	case "processing_time":
		return trigger.ProcessingTime(), nil
	case "continuous":
		d, err := durs(args, 1)
		if err != nil {
			return nil, err
		}
		return trigger.Continuous(d[0])
	case "count":
		d, err := durs(args, 1)
		if err != nil {
			return nil, err
		}
		return trigger.Count(int64(d[0]))
	case "purging":
		if len(args) != 1 {
			return nil, fmt.Errorf("purging needs one nested trigger")
		}
		in, err := parseTrigger(args[0])
		if err != nil {
			return nil, err
		}
		return trigger.Purging(in), nil
	case "final":
		return trigger.Final(), nil
	case "never":
		return trigger.Never(), nil
	case "end_of_stream":
		return trigger.EndOfStream(), nil
	case "not_mergeable":
		return notMergeable{trigger.EventTime()}, nil
	}
	return nil, fmt.Errorf("unknown trigger %q", s)
}

// notMergeable is a custom trigger that cannot merge (for D3).
type notMergeable struct{ trigger.Trigger }

func (notMergeable) CanMerge() bool { return false }
