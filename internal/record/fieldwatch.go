package record

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/internal/suggest"
)

// The field watch looks at the first watchRecords records, or those of
// the first watchFor milliseconds of the clock, whichever ends first.
const (
	watchRecords = 1000
	watchFor     = 1000
	// watchNames caps the field names the watch keeps for its advice.
	watchNames = 256
)

// FieldWarning says that a field the spec reads never appeared in the
// first records of a run: a misspelled name in the spec, or a CSV
// header that does not match it.
type FieldWarning struct {
	// Field is the name the spec gives; Path where the spec gives it
	// (source.timestamp.field, key, aggregate[1].field).
	Field, Path string
	// Records is how many records were looked at.
	Records int64
	// Effect is what the job does without it: every record a dead
	// letter (timestamp and key fields), or an aggregate of nulls.
	Effect string
	// Fix is the did-you-mean, or the fields the records do have.
	Fix string
	// Have are the field names the records had (sorted, at most 20).
	Have []string
}

// Fatal reports whether every record becomes a dead letter without the
// field (a timestamp or key field).
func (w FieldWarning) Fatal() bool {
	return !strings.HasPrefix(w.Path, "aggregate") && w.Path != "where"
}

// String is the warning as weir prints it, with the fix.
func (w FieldWarning) String() string {
	return fmt.Sprintf("%s %q never appeared in the first %d records: %s; %s", w.Path, w.Field, w.Records, w.Effect, w.Fix)
}

// fieldWatch notes which of the decoder's fields the first records
// have, and the names they do have; then it judges once. Decoding
// goroutines call observe concurrently; after the judgment each record
// costs one atomic load.
type fieldWatch struct {
	Done  atomic.Bool
	N     atomic.Int64
	first atomic.Int64 // the clock at the first record, Unix ms (0: none yet)
	seen  []atomic.Bool
	mu    sync.Mutex
	names map[string]struct{} // guarded by mu
	warns []FieldWarning      // guarded by mu; final once done is set
}

// observe notes a record's fields (sc.got, as gather set them, and the
// object's names) and judges when the watch is over.
func (d *Decoder) observe(o *fastjson.Object, sc *scratch) {
	w := &d.watch
	n := w.N.Add(1)
	if n == 1 {
		w.first.Store(int64(clock.Millis(d.clk)))
	}
	for i, g := range sc.got {
		if g != nil && !w.seen[i].Load() {
			w.seen[i].Store(true)
		}
	}
	if n <= watchRecords && !w.allSeen() {
		w.mu.Lock()
		if w.names == nil {
			w.names = map[string]struct{}{}
		}
		o.Visit(func(k []byte, _ *fastjson.Value) {
			if len(w.names) < watchNames {
				if _, ok := w.names[string(k)]; !ok {
					w.names[string(k)] = struct{}{}
				}
			}
		})
		w.mu.Unlock()
	}
	if n >= watchRecords || n%64 == 0 && int64(clock.Millis(d.clk))-w.first.Load() >= watchFor {
		d.Judge()
	}
}

// allSeen reports whether every configured field has appeared: then the
// records' names are not needed (they only serve a did-you-mean).
func (w *fieldWatch) allSeen() bool {
	for i := range w.seen {
		if !w.seen[i].Load() {
			return false
		}
	}
	return true
}

// Judge decides, once, which configured fields never appeared, and
// warns about each. The end of a run calls it too, for runs shorter
// than the watch.
func (d *Decoder) Judge() {
	w := &d.watch
	w.mu.Lock()
	if w.Done.Load() || w.N.Load() == 0 {
		w.mu.Unlock()
		return
	}
	have := slices.Sorted(func(yield func(string) bool) {
		for k := range w.names {
			if !yield(k) {
				return
			}
		}
	})
	n := w.N.Load()
	shown := have[:min(len(have), 20)]
	for i, f := range d.fields {
		if f == "" || w.seen[i].Load() {
			continue
		}
		fix := "the records' fields: " + strings.Join(shown, ", ")
		like := suggest.Closest(f, have)
		if like == "" {
			like = alike(f, have)
		}
		if like == "" && i == d.tsAt {
			like = timeLike(have)
		}
		if like != "" {
			fix = suggest.DidYouMean(like) + " (" + fix + ")"
		}
		if root, _, nested := strings.Cut(f, "."); nested && slices.Contains(have, root) {
			// key: [u.id] names a field "u.id"; the records hold u.
			fix = fmt.Sprintf("a dotted name is a field of that name, not %q's nested field: compute it, computed: [{name: %s, expr: %q}], and name that (%s)",
				root, strings.ReplaceAll(f, ".", "_"), f, "the records' fields: "+strings.Join(shown, ", "))
		}
		for _, u := range d.uses(i) {
			w.warns = append(w.warns, FieldWarning{Field: f, Path: u.path, Records: n, Effect: u.effect, Fix: fix, Have: shown})
		}
	}
	w.Done.Store(true)
	warns := w.warns
	w.mu.Unlock()
	if d.WarnField != nil {
		for _, fw := range warns {
			d.WarnField(fw)
		}
	}
}

type fieldUse struct{ path, effect string }

// uses are where the spec reads field i, and what its absence does.
func (d *Decoder) uses(i int) []fieldUse {
	var out []fieldUse
	if d.tsAt == i {
		out = append(out, fieldUse{"source.timestamp.field", "every record becomes a dead letter (timestamp_missing)"})
	}
	for k, at := range d.keyAt {
		if at == i {
			path := "key"
			if len(d.keyAt) > 1 {
				path = fmt.Sprintf("key[%d]", k)
			}
			effect := "every record becomes a dead letter (key_missing)"
			if d.p.NullKeys {
				effect = "every record's key there is null (null_keys: true), so the records of a window fall into one group"
			}
			out = append(out, fieldUse{path, effect})
		}
	}
	for a, at := range d.aggAt {
		if at == i {
			ag := d.p.Aggregates[a]
			effect := fmt.Sprintf("aggregate %q (%s) sees no values, so its results are null", ag.Name, ag.Fn)
			if ag.Fn == "count" {
				effect = fmt.Sprintf("aggregate %q (count of a field) counts nothing, so its results are 0", ag.Name)
			}
			out = append(out, fieldUse{fmt.Sprintf("aggregate[%d].field", a), effect})
		}
	}
	if slices.Contains(d.whereAt, i) {
		out = append(out, fieldUse{"where", "the where reads it as NULL in every record (a comparison with it is never true, so the where filters them all unless it tests IS NULL)"})
	}
	for a, at := range d.whenAt {
		if at == i {
			ag := d.p.Aggregates[a]
			out = append(out, fieldUse{fmt.Sprintf("aggregate[%d].when", a), fmt.Sprintf("aggregate %q (%s) takes no record, so its results are null (counts 0)", ag.Name, ag.Fn)})
		}
	}
	return out
}

// FieldWarnings returns the watch's warnings (nil before it judged).
func (d *Decoder) FieldWarnings() []FieldWarning {
	if !d.watch.Done.Load() {
		return nil
	}
	d.watch.mu.Lock()
	defer d.watch.mu.Unlock()
	return slices.Clone(d.watch.warns)
}

// alike finds a name in have that matches name once case, '_' and '-'
// are ignored, or that contains it or is contained in it (of three
// letters or more): user_id and userId, user and user_id.
func alike(name string, have []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(s))
	}
	n := norm(name)
	if len(n) < 3 {
		return ""
	}
	for _, h := range have {
		if norm(h) == n {
			return h
		}
	}
	for _, h := range have {
		if m := norm(h); len(m) >= 3 && (strings.Contains(m, n) || strings.Contains(n, m)) {
			return h
		}
	}
	return ""
}

// timeLike finds the one name in have that looks like a timestamp's (ts,
// time, timestamp, event_time, created_at, date, ...), for a timestamp
// field the records do not have; "" when none or several do.
func timeLike(have []string) string {
	found := ""
	for _, h := range have {
		n := strings.ToLower(h)
		if n == "ts" || strings.HasSuffix(n, "_ts") || strings.Contains(n, "time") || strings.Contains(n, "date") || strings.HasSuffix(n, "_at") {
			if found != "" {
				return ""
			}
			found = h
		}
	}
	return found
}
