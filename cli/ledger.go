package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// ledgerCmd looks at a job's late-data ledger: weir ledger ls|stats JOB.yaml.
func ledgerCmd(args []string, o IO) int {
	if len(args) == 0 || args[0] != "ls" && args[0] != "stats" {
		fmt.Fprintln(o.Stderr, "usage: weir ledger ls JOB.yaml [--key FIELD=VALUE] [--reason R] [--window START..END] [--since DURATION] [--limit N]")
		fmt.Fprintln(o.Stderr, "       weir ledger stats JOB.yaml [--since DURATION]")
		return ExitUsage
	}
	cmd := args[0]
	fs := flag.NewFlagSet("ledger "+cmd, flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	since := fs.Duration("since", 0, "only entries that arrived within this long before now (0: all)")
	var reason, windows *string
	var keys keyFlag
	var limit *int
	if cmd == "ls" {
		fs.Var(&keys, "key", "only entries of this key: FIELD=VALUE (a JSON value, or a plain string; repeat it for each field of a key of several)")
		reason = fs.String("reason", "", "only entries with this reason: window_expired or window_expired_partial")
		windows = fs.String("window", "", "only entries that missed a window overlapping START..END (Unix ms or RFC 3339)")
		limit = fs.Int("limit", 100, "print at most this many entries (0: all)")
	}
	paths, ok := parsePaths(fs, args[1:])
	if !ok {
		return ExitUsage
	}
	switch {
	case *since < 0:
		fmt.Fprintf(o.Stderr, "weir ledger %s: --since %v is negative: give how long before now, such as 1h\n", cmd, *since)
		return ExitUsage
	case limit != nil && *limit < 0:
		fmt.Fprintf(o.Stderr, "weir ledger ls: --limit %d is negative: give 0 for all entries\n", *limit)
		return ExitUsage
	}
	if len(paths) != 1 {
		fmt.Fprintf(o.Stderr, "weir ledger %s: give one job spec\n", cmd)
		return ExitUsage
	}
	p, ok := loadSpec(paths[0], o)
	if !ok {
		return ExitUsage
	}
	if k := p.Sinks.Late; k == nil || !slices.Contains(connector.LedgerKinds(p.Kinds()), k.Type) {
		fmt.Fprintf(o.Stderr, "weir ledger: %s has no ledger; set sinks.late: {type: ledger, dir: ledger} (or a postgres table, or a kafka topic)\n", paths[0])
		return ExitUsage
	}
	keep := func(e ledger.Entry) bool {
		return *since == 0 || time.UnixMilli(e.ArrivedAt).After(time.Now().Add(-*since))
	}
	if cmd == "ls" {
		f, err := lsFilter(keys, *reason, *windows)
		if err == nil {
			err = checkFilter(p, keys, *reason)
		}
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir ledger ls:", err)
			return ExitUsage
		}
		base := keep
		keep = func(e ledger.Entry) bool { return base(e) && f(e) }
	}
	var entries []ledger.Entry
	collect := func(e ledger.Entry) error {
		if keep(e) {
			entries = append(entries, e)
		}
		return nil
	}
	specDir := filepath.Dir(o.path(paths[0]))
	bad, where, err := backfill.ScanLedger(p, specDir, collect)
	if errors.Is(err, connector.ErrNoLedger) {
		fmt.Fprintln(o.Stderr, "weir ledger:", err)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir ledger:", err)
		return ExitFailed
	}
	for _, b := range bad {
		fmt.Fprintf(o.Stderr, "warning: %s (the entry is unreadable; the others are fine)\n", b)
	}
	shown, nbad := strings.Join(where, " and "), len(bad)
	if cmd == "ls" {
		// In the order of the source (line, or partition and offset):
		// the window subtasks write the ledger in parallel, so the order
		// it holds entries in is not the order they were read in.
		slices.SortStableFunc(entries, func(a, b ledger.Entry) int { return compareIDs(a.ID, b.ID) })
		// A ledger that runs appended to (--append) may hold one id of
		// each: then each entry says its run.
		runs := map[int64]bool{}
		for _, e := range entries {
			runs[e.Run] = true
		}
		for i, e := range entries {
			if *limit > 0 && i == *limit {
				fmt.Fprintf(o.Stdout, "... %d more (--limit 0 for all)\n", len(entries)-i)
				break
			}
			spec := ""
			if len(runs) > 1 {
				spec = " run=" + strconv.FormatInt(e.Run, 10)
			}
			if e.Spec != "" {
				spec += " spec=" + e.Spec
			}
			fmt.Fprintf(o.Stdout, "%s %s key=%s ts=%s windows=%s watermark=%s late_by=%s arrived=%s%s record=%s\n",
				e.ID, e.Reason, e.Key, msTime(e.TS), windowsText(e.Windows), msTime(e.Watermark), (time.Duration(e.LatenessMS) * time.Millisecond).String(),
				msTime(e.ArrivedAt), spec, compact(e.Record))
		}
		return ExitOK
	}
	ledgerStats(o.Stdout, shown, entries, nbad)
	return ExitOK
}

// compareIDs orders entry ids by their numbers ("0:9" before "0:10"),
// part by part; ids that are not numbers compare as text.
func compareIDs(a, b string) int {
	for a != "" || b != "" {
		x, ra, _ := strings.Cut(a, ":")
		y, rb, _ := strings.Cut(b, ":")
		nx, ex := strconv.ParseInt(x, 10, 64)
		ny, ey := strconv.ParseInt(y, 10, 64)
		c := cmp.Compare(nx, ny)
		if ex != nil || ey != nil {
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return 0
}

// lsFilter builds the entry filter of weir ledger ls.
// checkFilter refuses a --key field that is not one of the job's key
// fields, and a --reason that no ledger entry has: either would match
// nothing, without a word.
func checkFilter(p *spec.Plan, keys []string, reason string) error {
	for _, key := range keys {
		if field, _, ok := strings.Cut(key, "="); ok && !slices.Contains(p.Key, field) {
			if len(p.Key) == 0 {
				return fmt.Errorf("--key %s: the job has no key fields, so its entries have no key to match", field)
			}
			return fmt.Errorf("--key %s: not a key field of the job; its key fields are %s%s", field, strings.Join(p.Key, ", "), didYouMean(field, p.Key))
		}
	}
	if reasons := []string{window.Expired.String(), window.ExpiredPartial.String()}; reason != "" && !slices.Contains(reasons, reason) {
		return fmt.Errorf("--reason %q: ledger entries have reason %s", reason, strings.Join(reasons, " or "))
	}
	return nil
}

// didYouMean is "; did you mean X?" for the closest of known to name,
// or "".
func didYouMean(name string, known []string) string {
	if c := suggest.Closest(name, known); c != "" {
		return "; " + suggest.DidYouMean(c)
	}
	return ""
}

func lsFilter(keys []string, reason, windows string) (func(ledger.Entry) bool, error) {
	want := map[string][]byte{} // each --key's field and canonical value
	for _, key := range keys {
		f, v, ok := strings.Cut(key, "=")
		if !ok {
			return nil, fmt.Errorf("--key %q: use FIELD=VALUE, such as user_id=u17", key)
		}
		if _, twice := want[f]; twice {
			return nil, fmt.Errorf("--key %s is given twice: an entry has one value of a field (repeat --key for the other fields of a key of several)", f)
		}
		value := []byte(v)
		if !json.Valid(value) {
			value, _ = json.Marshal(v)
		}
		want[f] = canonical(value)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if windows != "" {
		var err error
		if lo, hi, err = parseRange("--window", windows, "START..END in Unix ms or RFC 3339"); err != nil {
			return nil, err
		}
	}
	return func(e ledger.Entry) bool {
		if reason != "" && e.Reason != reason {
			return false
		}
		if len(want) > 0 {
			var m map[string]json.RawMessage
			if json.Unmarshal(e.Key, &m) != nil {
				return false
			}
			for field, value := range want {
				if !bytes.Equal(canonical(m[field]), value) {
					return false
				}
			}
		}
		if windows != "" {
			return slices.ContainsFunc(e.Windows, func(w [2]int64) bool { return w[0] < hi && w[1] > lo })
		}
		return true
	}, nil
}

// keyFlag is a repeatable --key FIELD=VALUE.
type keyFlag []string

func (k *keyFlag) String() string     { return strings.Join(*k, " ") }
func (k *keyFlag) Set(v string) error { *k = append(*k, v); return nil }

// parseRange parses a FROM..TO flag value (Unix ms, dates or RFC 3339
// times): FROM must come before TO, and a pair of numbers that reads as
// Unix seconds is refused with that hint (as ms they would be 1970).
func parseRange(flag, v, form string) (from, to int64, err error) {
	a, b, ok := strings.Cut(v, "..")
	from, err1 := parseMs(a)
	to, err2 := parseMs(b)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%s %q: use %s", flag, v, form)
	case from >= to:
		return 0, 0, fmt.Errorf("%s %q: %s is not before %s, so nothing is in the range", flag, v, a, b)
	case looksLikeSeconds(a, from) && looksLikeSeconds(b, to):
		return 0, 0, fmt.Errorf("%s %q: these look like Unix seconds (as milliseconds they are in January 1970); give milliseconds (%d..%d) or RFC 3339 times", flag, v, from*1000, to*1000)
	}
	return from, to, nil
}

// looksLikeSeconds: s is a number of Unix seconds between 2001 and 2286,
// not milliseconds (which would be 1970).
func looksLikeSeconds(s string, n int64) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= 1e9 && n < 1e10
}

func parseMs(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.UnixMilli(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UnixMilli(), err
}

// canonical is a key value's canonical text (spec.CanonicalJSON), so that
// --key k=1.0 finds the key 1 and a Postgres ledger's jsonb text is
// compared as the job wrote the key; b itself if it is not JSON.
func canonical(b []byte) []byte {
	if c, err := backfill.CanonicalJSON(b); err == nil {
		return c
	}
	return b
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// windowsText shows windows by their times of day, or all with their
// dates when one spans days (a day's window would otherwise read
// [16:00:00,16:00:00), whichever day it is), so that one entry's windows
// read alike.
func windowsText(ws [][2]int64) string {
	layout := "15:04:05"
	for _, w := range ws {
		s, e := time.UnixMilli(w[0]).UTC(), time.UnixMilli(w[1]).UTC()
		if s.YearDay() != e.Add(-time.Millisecond).YearDay() || e.Sub(s) >= 24*time.Hour {
			layout = "2006-01-02T15:04:05"
		}
	}
	var parts []string
	for _, w := range ws {
		parts = append(parts, "["+time.UnixMilli(w[0]).UTC().Format(layout)+","+time.UnixMilli(w[1]).UTC().Format(layout)+")")
	}
	return strings.Join(parts, "")
}

// ledgerStats prints counts by arrival day, reason, key and input
// (Kafka partition, from the entry id) and lateness percentiles.
func ledgerStats(w io.Writer, dir string, entries []ledger.Entry, bad int) {
	fmt.Fprintf(w, "ledger %s: %d entries", dir, len(entries))
	if bad > 0 {
		fmt.Fprintf(w, ", %d unreadable lines", bad)
	}
	fmt.Fprintln(w)
	if len(entries) == 0 {
		return
	}
	count := func(title string, by func(e ledger.Entry) string, top int) {
		m := map[string]int{}
		for _, e := range entries {
			m[by(e)]++
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if m[a] != m[b] && top > 0 {
				return m[b] - m[a]
			}
			return strings.Compare(a, b)
		})
		fmt.Fprintf(w, "by %s:\n", title)
		for i, k := range keys {
			if top > 0 && i == top {
				fmt.Fprintf(w, "  ... %d more\n", len(keys)-i)
				break
			}
			fmt.Fprintf(w, "  %-40s %d\n", k, m[k])
		}
	}
	jobs := map[string]bool{}
	for _, e := range entries {
		jobs[e.Job] = true
	}
	if len(jobs) > 1 {
		// A ledger shared by jobs (or copied from another): weir
		// backfill folds only its own job's entries.
		count("job (weir backfill folds its own job's only)", func(e ledger.Entry) string { return cmp.Or(e.Job, "(unnamed: written before entries named their job)") }, 0)
	}
	count("arrival day", func(e ledger.Entry) string { return time.UnixMilli(e.ArrivedAt).UTC().Format(time.DateOnly) }, 0)
	count("reason", func(e ledger.Entry) string { return e.Reason }, 0)
	count("key (top 10)", func(e ledger.Entry) string { return string(compact(e.Key)) }, 10)
	count("input", func(e ledger.Entry) string {
		if p, _, ok := strings.Cut(e.ID, ":"); ok {
			return "partition " + p
		}
		return "the source"
	}, 10)
	late := make([]int64, len(entries))
	for i, e := range entries {
		late[i] = e.LatenessMS
	}
	slices.Sort(late)
	q := func(p float64) time.Duration {
		return time.Duration(late[min(len(late)-1, int(p*float64(len(late))))]) * time.Millisecond
	}
	fmt.Fprintf(w, "lateness: p50 %v, p90 %v, p99 %v, max %v\n", q(0.5), q(0.9), q(0.99), time.Duration(late[len(late)-1])*time.Millisecond)
}
