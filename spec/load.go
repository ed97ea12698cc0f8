package spec

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/suggest"
	"go.yaml.in/yaml/v3"
)

const (
	// maxDepth bounds how deeply the walker descends, which also stops an
	// alias that refers to one of its own ancestors.
	maxDepth = 64
	// maxAliasNodes bounds the nodes walked through aliases, so that a small
	// document cannot make the walker do (or report) a huge amount of work.
	maxAliasNodes = 10000
	// durationFix is the Fix of every bad duration.
	durationFix = `use a duration such as "250ms", "10m" or "1h30m", or an integer number of milliseconds`
	wholeFix    = "use a whole number such as 4"
	// magLimit is the largest duration magnitude tracked: |math.MinInt64|.
	magLimit = uint64(1) << 63
)

// Load parses a job spec written in YAML (or JSON, which is YAML) and
// returns it with every field the document gives filled in.
//
// Load checks only structure and types: unknown or repeated fields, values
// of the wrong kind, malformed numbers and durations. It does not check
// required fields, allowed values or cross-field rules. When anything is
// wrong it returns an error of type Errors listing every problem in
// document order, and, when the document was a mapping, the spec as far as
// it could be filled (Parse compiles it to report the remaining problems
// too); each with its field path (such as
// "window.size" or "aggregate[1].fn"), its line and usually a fix. A null
// or empty value leaves a field at its zero value (nil for pointers).
//
// The spec is one YAML document (further empty documents are ignored).
// Anchors and aliases are followed; merge keys ("<<") are refused. A list
// of strings may be given as a single string: key: user_id.
func Load(data []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{Msg: "the spec is empty"}}
		}
		return nil, syntaxError(err)
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, syntaxError(err)
		} else if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			return nil, Errors{{Line: extra.Line, Msg: "the spec has a second YAML document",
				Fix: `remove the "---" line and what follows, or merge the documents`}}
		}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind == yaml.DocumentNode || isNull(root) {
		return nil, Errors{{Msg: "the spec is empty"}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{Line: root.Line, Msg: "the spec must be a mapping of fields such as name, source, window"}}
	}
	var s Spec
	w := walker{}
	w.value(reflect.ValueOf(&s).Elem(), root, "", 0)
	s.Warnings = w.warns
	if len(w.errs) > 0 {
		slices.SortStableFunc(w.errs, func(a, b FieldError) int { return cmp.Compare(a.Line, b.Line) })
		return &s, w.errs
	}
	return &s, nil
}

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: msg") into Errors.
// yaml.v3 numbers the lines of its parser's errors (unlike its scanner's)
// from 0 and leaves out line 0, so those lines are corrected here.
func syntaxError(err error) Errors {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, after
			}
		}
	}
	switch msg {
	case "did not find expected node content", "did not find expected key",
		"did not find expected '-' indicator", "did not find expected ',' or ']'",
		"did not find expected ',' or '}'", "did not find expected <document start>",
		"found undefined tag handle", "found duplicate %YAML directive",
		"found duplicate %TAG directive", "found incompatible YAML document":
		line++
	}
	return Errors{{Line: line, Msg: "not valid YAML: " + msg}}
}

// walker fills Go values from YAML nodes by reflection on `yaml` tags,
// collecting every problem instead of stopping at the first.
type walker struct {
	errs       Errors
	warns      Errors
	inAlias    int  // > 0 while walking the target of an alias
	aliasNodes int  // nodes walked while inAlias > 0
	stopped    bool // the alias budget ran out: walk no further
}

func (w *walker) fail(path string, n *yaml.Node, msg, fix string) {
	w.errs = append(w.errs, FieldError{Path: path, Line: n.Line, Column: n.Column, Msg: msg, Fix: fix})
}

// visit counts a node walked and reports false once the alias budget is
// exhausted.
func (w *walker) visit(path string, n *yaml.Node) bool {
	if w.stopped {
		return false
	}
	if w.inAlias > 0 {
		if w.aliasNodes++; w.aliasNodes > maxAliasNodes {
			w.stopped = true
			w.fail(path, n, fmt.Sprintf("aliases expand to more than %d values", maxAliasNodes), "use fewer aliases")
			return false
		}
	}
	return true
}

// value stores node n into the settable v, whose field path is path.
func (w *walker) value(v reflect.Value, n *yaml.Node, path string, depth int) {
	if depth > maxDepth {
		w.fail(path, n, "nested too deeply", fmt.Sprintf("a spec nests at most %d levels; check for an alias that refers to itself", maxDepth))
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil {
			w.inAlias++
			w.value(v, n.Alias, path, depth+1)
			w.inAlias--
		}
		return
	}
	if !w.visit(path, n) {
		return
	}
	if isNull(n) {
		v.SetZero()
		return
	}
	for v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		v.Set(p)
		v = p.Elem()
	}
	if v.Type() == reflect.TypeFor[ByteSize]() {
		if b, msg := byteSizeValue(n); msg != "" {
			w.fail(path, n, msg, byteSizeFix)
		} else {
			v.SetInt(int64(b))
		}
		return
	}
	if v.Type() == reflect.TypeFor[Duration]() {
		if d, msg, fix := durationValue(n); msg != "" {
			w.fail(path, n, msg, fix)
		} else {
			if _, bare := wholeNumber(n); bare && d > 0 && d < 1000 {
				w.warns = append(w.warns, FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf("the bare number %d is read as %d milliseconds", d, d),
					Fix: fmt.Sprintf("write %dms to say so, or %ds if you meant seconds", d, d)})
			}
			v.SetInt(int64(d))
		}
		return
	}
	if v.Type() == reflect.TypeFor[SinkList]() && n.Kind != yaml.SequenceNode {
		// One sink (or what should be one): a list of one, at the same
		// path.
		l := SinkList{new(Sink)}
		w.fields(reflect.ValueOf(l[0]).Elem(), n, path, depth)
		v.Set(reflect.ValueOf(l))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		w.fields(v, n, path, depth)
	case reflect.Slice:
		items := n.Content
		if n.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String {
			items = []*yaml.Node{n} // key: user_id means [user_id]
		} else if n.Kind != yaml.SequenceNode {
			w.fail(path, n, "want a list, got "+describe(n), `put each item on its own line starting with "- "`)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, item := range items {
			w.value(s.Index(i), item, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.fail(path, n, "want a string, got "+describe(n), "")
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int64:
		text, ok := wholeNumber(n)
		if !ok {
			w.fail(path, n, "want a whole number, got "+describe(n), wholeFix)
			return
		}
		i, err := strconv.ParseInt(text, 10, v.Type().Bits())
		if err != nil {
			w.fail(path, n, fmt.Sprintf("%s is out of range", text), wholeFix)
			return
		}
		v.SetInt(i)
	case reflect.Uint64:
		text, ok := wholeNumber(n)
		if !ok || strings.HasPrefix(text, "-") {
			w.fail(path, n, "want a whole number of 0 or more, got "+describe(n), wholeFix)
			return
		}
		u, err := strconv.ParseUint(strings.TrimPrefix(text, "+"), 10, 64)
		if err != nil {
			w.fail(path, n, fmt.Sprintf("%s is out of range", text), wholeFix)
			return
		}
		v.SetUint(u)
	case reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			w.fail(path, n, "want a number, got "+describe(n), "use a number such as 0.5")
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			w.fail(path, n, "want true or false, got "+describe(n), "")
			return
		}
		v.SetBool(b)
	default:
		w.fail(path, n, fmt.Sprintf("cannot load a field of Go type %s", v.Type()), "")
	}
}

// fields stores mapping n into the struct v, field by field.
func (w *walker) fields(v reflect.Value, n *yaml.Node, path string, depth int) {
	names := make([]string, v.NumField()) // YAML name of each Go field
	for i := range names {
		names[i] = yamlName(v.Type().Field(i))
	}
	if n.Kind != yaml.MappingNode {
		w.fail(path, n, "want a mapping of fields, got "+describe(n), knownFields(names))
		return
	}
	seen := map[string]int{} // field name → line first given
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		line := key.Line
		for d := 0; key.Kind == yaml.AliasNode && key.Alias != nil && d < maxDepth; d++ {
			key = key.Alias
		}
		if !w.visit(path, key) {
			return
		}
		if key.Kind != yaml.ScalarNode {
			w.errs = append(w.errs, FieldError{Path: path, Line: line, Column: key.Column, Msg: "a field name must be a plain string, got " + describe(key)})
			continue
		}
		if key.ShortTag() == "!!merge" {
			w.errs = append(w.errs, FieldError{Path: path, Line: line, Column: key.Column, Msg: `merge keys ("<<") are not supported`, Fix: "write the fields out instead"})
			continue
		}
		p := key.Value
		if path != "" {
			p = path + "." + key.Value
		}
		if first, ok := seen[key.Value]; ok {
			w.errs = append(w.errs, FieldError{Path: p, Line: line, Column: key.Column, Msg: fmt.Sprintf("given twice (first on line %d)", first), Fix: "keep only one"})
			continue
		}
		seen[key.Value] = line
		if f := slices.Index(names, key.Value); f >= 0 && key.Value != "" && key.Value != "-" {
			w.value(v.Field(f), val, p, depth+1)
			continue
		}
		if x, ok := extrasOf(v); ok && key.Value != "" && key.Value != "-" {
			// A setting of the source's or sink's kind alone, perhaps:
			// Compile, which knows the kinds, checks it.
			var val2 any
			if err := val.Decode(&val2); err != nil {
				w.errs = append(w.errs, FieldError{Path: p, Line: val.Line, Column: val.Column, Msg: err.Error()})
				continue
			}
			x.set(key.Value, val2, [2]int{line, key.Column})
			continue
		}
		w.errs = append(w.errs, FieldError{Path: p, Line: line, Column: key.Column, Msg: fmt.Sprintf("unknown field %q", key.Value), Fix: fieldFix(key.Value, names)})
	}
}

// extras are the settings of a source's or sink's kind alone
// (Source.Extra, Sink.Extra), with the names of the spec's own fields
// of that block, which are not among them.
type extras struct {
	m      *map[string]any
	at     *map[string][2]int
	fields []string
}

// extrasOf is the extras of v when v is a source or sink whose settings
// are being read.
func extrasOf(v reflect.Value) (extras, bool) {
	if !v.CanAddr() {
		return extras{}, false
	}
	switch k := v.Addr().Interface().(type) {
	case *Sink:
		return extras{&k.Extra, &k.ExtraAt, sinkFields}, true
	case *Source:
		return extras{&k.Extra, &k.ExtraAt, sourceFields}, true
	}
	return extras{}, false
}

// get is the extra setting name (nil: unset).
func (x extras) get(name string) any { return (*x.m)[name] }

// set sets the extra setting name, given at line and column at (zero:
// a default).
func (x extras) set(name string, v any, at [2]int) {
	if *x.m == nil {
		*x.m = map[string]any{}
	}
	(*x.m)[name] = v
	if at != [2]int{} {
		if *x.at == nil {
			*x.at = map[string][2]int{}
		}
		(*x.at)[name] = at
	}
}

// holds reports whether name (the first part of a dotted one) is an
// extra setting, not one of the block's spec fields.
func (x extras) holds(name string) bool {
	first, _, _ := strings.Cut(name, ".")
	return !slices.Contains(x.fields, first)
}

// fieldFix is the Fix for unknown field name: the closest known field within
// edit distance 2 (or equal ignoring case), else the list of known fields.
func fieldFix(name string, known []string) string {
	return suggest.Or(name, known, knownFields(known))
}

// hint puts the did-you-mean for value, among known, before fix (fix
// alone when nothing is close).
func hint(value string, known []string, fix string) string {
	if best := suggest.Closest(value, known); best != "" {
		return suggest.DidYouMean(best) + " (" + fix + ")"
	}
	return fix
}

func knownFields(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	sorted = slices.DeleteFunc(sorted, func(n string) bool { return n == "-" }) // not YAML: Spec.Warnings
	return "known fields: " + strings.Join(sorted, ", ")
}

// isNull reports whether n is a null scalar: null, ~ or an empty value.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// wholeNumber returns the text of n if n is an unquoted decimal integer.
func wholeNumber(n *yaml.Node) (string, bool) {
	if tag := n.ShortTag(); n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		return "", false
	}
	digits := strings.TrimLeft(n.Value, "+-")
	if len(n.Value)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	return n.Value, true
}

// describe names what n is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if r := []rune(n.Value); len(r) > 40 {
		return strconv.Quote(string(r[:40]) + "...")
	}
	return strconv.Quote(n.Value)
}

// durationValue decodes a Duration node: an integer (milliseconds,
// saturating) or a duration string. It returns a message and fix on error.
func durationValue(n *yaml.Node) (d Duration, msg, fix string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "want a duration, got " + describe(n), durationFix
	}
	if text, ok := wholeNumber(n); ok {
		i, _ := strconv.ParseInt(text, 10, 64) // saturates on ErrRange
		return Duration(i), "", ""
	}
	if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" {
		return 0, "want a duration, got the number " + n.Value, durationFix
	}
	d, err := ParseDuration(n.Value)
	if err != nil {
		return 0, err.Error(), durationFix
	}
	return d, "", ""
}

const byteSizeFix = "write a size such as 512MiB, 2GB or 1073741824 (bytes)"

// byteSizeValue decodes a ByteSize node: an integer (bytes) or a number
// and a unit. It returns a message on error.
func byteSizeValue(n *yaml.Node) (ByteSize, string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "want a size, got " + describe(n)
	}
	b, err := ParseByteSize(n.Value)
	if err != nil {
		return 0, err.Error()
	}
	return b, ""
}

// ParseByteSize parses an integer number of bytes, or a number (with an
// optional fraction) and one of the units B, KB, MB, GB, TB, KiB, MiB,
// GiB, TiB (case-insensitive, with an optional space).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("unknown size unit %q in %q", unit, s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(v), nil
}

// unitMillis is the length of a duration unit in milliseconds: ms, s,
// m, h, d, or a word of Flink's configuration (sec, min, minutes, hour,
// days, ...), as a SQL job's SET takes them.
func unitMillis(unit string) (uint64, bool) {
	switch unit {
	case "ms", "milli", "millis", "millisecond", "milliseconds":
		return 1, true
	case "s", "sec", "secs", "second", "seconds":
		return 1000, true
	case "m", "min", "mins", "minute", "minutes":
		return 60_000, true
	case "h", "hour", "hours":
		return 3_600_000, true
	case "d", "day", "days":
		return 86_400_000, true
	}
	return 0, false
}

// ParseDuration parses a duration string: an optional "-" and then one or
// more number+unit pairs such as "1h30m" or "1.5s", with units ms, s, m, h
// and d (24h), or Flink's words for them, after a space or not ("5 min",
// "30 seconds"). Numbers may have a fraction. The total saturates at the
// int64 range instead of overflowing. A total with a sub-millisecond part,
// and the units ns, us and µs, are errors: durations have millisecond
// precision. ParseDuration(d.String()) == d for every Duration d.
func ParseDuration(s string) (Duration, error) {
	rest, neg := strings.CutPrefix(s, "-")
	bad := func(why string) (Duration, error) {
		return 0, fmt.Errorf("bad duration %q: %s", s, why)
	}
	if rest == "" {
		return bad("no number")
	}
	var total uint64 // magnitude, saturating at magLimit
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if i < 0 {
			return bad("missing unit after " + rest)
		}
		whole, frac := rest[:i], ""
		rest = rest[i:]
		if rest[0] == '.' {
			i = strings.IndexFunc(rest[1:], func(r rune) bool { return r < '0' || r > '9' }) + 1
			if i == 0 {
				return bad("missing unit after " + whole + rest)
			}
			frac, rest = rest[1:i], rest[i:]
		}
		if whole == "" && frac == "" {
			return bad("want a number before " + strconv.Quote(rest))
		}
		i = strings.IndexFunc(rest, func(r rune) bool { return r == '.' || r >= '0' && r <= '9' })
		if i < 0 {
			i = len(rest)
		}
		unit := strings.TrimLeft(rest[:i], " ") // "5 min", as Flink writes it, too
		if i < len(rest) {
			unit = strings.TrimRight(unit, " ") // "1 hour 30 min"
		}
		rest = rest[i:]
		ms, ok := unitMillis(unit)
		switch {
		case unit == "":
			return bad("missing unit after " + whole)
		case unit == "ns" || unit == "us" || unit == "µs" || unit == "μs":
			return bad("durations have millisecond precision")
		case !ok:
			return bad(fmt.Sprintf("unknown unit %q", unit))
		}
		term, exact := durationTerm(whole, frac, ms)
		if !exact {
			return bad("durations have millisecond precision")
		}
		total = min(total, magLimit-term) + term // saturating add
	}
	if neg {
		return Duration(-total), nil // -2^63 wraps to math.MinInt64 exactly
	}
	return Duration(min(total, math.MaxInt64)), nil
}

// durationTerm is whole.frac units of ms milliseconds each, saturating at
// magLimit, and whether it is a whole number of milliseconds.
func durationTerm(whole, frac string, ms uint64) (uint64, bool) {
	var n uint64
	for _, c := range whole { // n > magLimit/10 makes the result > magLimit
		n = min(min(n, magLimit/10+1)*10+uint64(c-'0'), magLimit)
	}
	hi, lo := bits.Mul64(n, ms)
	if hi != 0 || lo > magLimit {
		lo = magLimit
	}
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return lo, true
	}
	// A unit has at most 10 factors of 2 and 5 of 5, so a fraction with
	// more than 19 significant digits cannot be whole milliseconds.
	if len(frac) > 19 {
		return 0, false
	}
	f, _ := strconv.ParseUint(frac, 10, 64)
	pow := uint64(1)
	for range frac {
		pow *= 10
	}
	fhi, flo := bits.Mul64(f, ms) // f·ms < pow·ms, so fhi < pow
	q, r := bits.Div64(fhi, flo, pow)
	return min(lo+q, magLimit), r == 0
}

// String formats d as a duration string that ParseDuration reads back to
// d: the shorter of the unit form ("250ms", "30s", "10m", "1h30m", "2d")
// and the plain millisecond form ("9223372036854775807ms"), with a leading
// "-" when d is negative. Zero is "0s".
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	sign, mag := "", uint64(d)
	if d < 0 {
		sign, mag = "-", -mag
	}
	plain := sign + strconv.FormatUint(mag, 10) + "ms"
	var b strings.Builder
	b.WriteString(sign)
	for _, u := range [...]struct {
		name string
		ms   uint64
	}{{"d", 86_400_000}, {"h", 3_600_000}, {"m", 60_000}, {"s", 1000}, {"ms", 1}} {
		if q := mag / u.ms; q > 0 {
			b.WriteString(strconv.FormatUint(q, 10))
			b.WriteString(u.name)
			mag %= u.ms
		}
	}
	if b.Len() <= len(plain) {
		return b.String()
	}
	return plain
}
