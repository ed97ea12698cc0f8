package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/spec"
)

// A checkpoint's meta records the spec that wrote it, so that a restore
// under another spec can tell whether the checkpointed state and
// positions still mean what they meant (docs/format/checkpoint.md,
// "Changing a job" and "The job's meta").

// metaFormat is the format of the meta this weir writes. Format 1, a JSON
// object without a format field, is what weir wrote before formats were
// numbered (fingerprintV1); this weir reads formats 1 to metaFormat and
// refuses later ones. Format 3 is format 2's meta whose checkpoint keeps
// its sinks' states in the output part's sinks (outCounters.Sinks), where
// format 2 kept file lengths in offsets: a weir that reads only format 2
// would take the missing offsets for empty files and cut them, so it must
// refuse format 3.
const metaFormat = 3

// jobMeta is a checkpoint's meta in formats 2 and 3.
type jobMeta struct {
	// Format is 2 or 3.
	Format int `json:"format"`
	// State holds every state-relevant leaf field of the spec that is set,
	// by its path (such as window.size or sinks.results.path), as JSON.
	State map[string]json.RawMessage `json:"state"`
	// Other holds a digest (fieldDigest) of every other leaf field that
	// is set, by path: enough to tell that it changed, without writing
	// connection strings and passwords into the checkpoint.
	Other map[string]string `json:"other"`
	// Sinks names the sinks the job writes (results, late, ...).
	Sinks []string `json:"sinks"`
}

// stateFields classifies the spec's fields: true for a field the
// checkpointed state or positions depend on, which a restore refuses to
// see changed; false for one it resumes across. A field takes the class
// of its longest listed prefix (whole dot-separated elements; sinks.* is
// any sink, list indexes are left out); a field under none is
// state-relevant. The reason for each is in docs/format/checkpoint.md,
// "Changing a job".
var stateFields = map[string]bool{
	"name": true,
	"time": true,

	"source.type":              true,
	"source.path":              true,
	"source.format":            true,
	"source.channels":          true,
	"source.final_watermark":   false,
	"source.timestamp":         true,
	"source.generator":         true,
	"source.kafka.topic":       true,
	"source.kafka.brokers":     false,
	"source.kafka.group":       false,
	"source.kafka.start":       false,
	"source.kafka.stop_at_end": false,
	"source.kafka.tls":         false,
	"source.kafka.sasl":        false,
	"source.nats.stream":       true,
	"source.nats.subjects":     true,
	"source.nats.url":          false,
	"source.nats.start":        false,
	"source.nats.stop_at_end":  false,

	"watermark":            true,
	"key":                  true,
	"window":               true,
	"allowed_lateness":     true,
	"late_firing_interval": false,
	"trigger":              true,
	"aggregate":            true,

	"sinks.*.type":              true,
	"sinks.*.path":              true,
	"sinks.*.table":             true,
	"sinks.*.subject":           true,
	"sinks.*.dir":               true,
	"sinks.*.topic":             true,
	"sinks.*.marker_topic":      true,
	"sinks.*.url":               false,
	"sinks.*.brokers":           false,
	"sinks.*.tls":               false,
	"sinks.*.sasl":              false,
	"sinks.*.retention":         false,
	"sinks.*.timeout":           false,
	"sinks.*.retry_for":         false,
	"sinks.*.connect_retry_for": false,
	"sinks.*.batch_rows":        false,

	"checkpoint": false,
	"state":      false,
	"alerts":     false,
	"archive":    false,
	"doctor":     false,
}

// fieldClass is the class of the field at path (stateFields), and the
// listed prefix it takes it from ("" when none is listed).
func fieldClass(path string) (state bool, rule string) {
	p := normalPath(path)
	if name, ok := strings.CutPrefix(p, "sinks.*."); ok && !spec.IsSinkField(strings.Split(name, ".")[0]) {
		// A registered kind's own setting (spec.Sink.Extra), like a
		// sink's address: a change resumes, said; the meta keeps its
		// digest, no token in clear.
		return false, "sinks.*"
	}
	for {
		if s, ok := stateFields[p]; ok {
			return s, p
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return true, ""
		}
		p = p[:i]
	}
}

// normalPath leaves out a path's list indexes and names its sink *.
func normalPath(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '[' {
			for i < len(path) && path[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(path[i])
	}
	p := b.String()
	if rest, ok := strings.CutPrefix(p, "sinks."); ok {
		if _, tail, ok := strings.Cut(rest, "."); ok {
			return "sinks.*." + tail
		}
		return "sinks.*"
	}
	return p
}

// specFields is what a restore compares of two specs: the state-relevant
// fields by path with their JSON values, the other fields by path with
// their digests, and the sinks by name.
type specFields struct {
	state map[string]string
	other map[string]string
	sinks []string
}

// fieldsOf flattens s into its leaf fields, by the YAML path of each. A
// field that is not set (a nil pointer, or a zero value not behind a
// pointer) has no entry; a list of objects has one per element
// (aggregate[2].fn), a list of values one for the list. With legacy, the
// fields format 1 left out (json:"-") are left out too.
func fieldsOf(s *spec.Spec, legacy bool) specFields {
	f := specFields{state: map[string]string{}, other: map[string]string{}}
	emit := func(path string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprint(v))) // not reached: the spec's fields are plain data
		}
		if state, _ := fieldClass(path); state {
			f.state[path] = string(b)
		} else {
			f.other[path] = fieldDigest(path, b)
		}
	}
	flatten(reflect.ValueOf(s).Elem(), "", false, legacy, emit)
	sv := reflect.ValueOf(s.Sinks)
	for i := range sv.NumField() {
		if !sv.Field(i).IsNil() {
			f.sinks = append(f.sinks, yamlName(sv.Type().Field(i)))
		}
	}
	for i := 1; i < len(s.Sinks.Results); i++ {
		f.sinks = append(f.sinks, spec.ResultsName(i))
	}
	return f
}

// flatten calls emit for every set leaf of v at path; set says v was
// reached through a pointer, so that its zero value is set too.
func flatten(v reflect.Value, path string, set, legacy bool, emit func(string, any)) {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			flatten(v.Elem(), path, true, legacy, emit)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			name := yamlName(sf)
			if !sf.IsExported() || name == "-" || legacy && sf.Tag.Get("json") == "-" {
				continue
			}
			flatten(v.Field(i), join(name), false, legacy, emit)
		}
		if k, ok := v.Interface().(spec.Sink); ok && !legacy {
			// A kind's own settings, by their names as the spec gave them.
			for _, name := range slices.Sorted(maps.Keys(k.Extra)) {
				emit(join(name), k.Extra[name])
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		if v.Type() == reflect.TypeFor[spec.SinkList]() {
			// The first results sink's fields are at sinks.results.*, as
			// when a job had one only; the others' at sinks.results[i].*.
			for i := range v.Len() {
				flatten(v.Index(i), strings.TrimSuffix(path, "results")+spec.ResultsName(i), true, legacy, emit)
			}
			return
		}
		if et := v.Type().Elem(); et.Kind() == reflect.Struct || et.Kind() == reflect.Pointer && et.Elem().Kind() == reflect.Struct {
			for i := range v.Len() {
				flatten(v.Index(i), path+"["+strconv.Itoa(i)+"]", true, legacy, emit)
			}
			return
		}
		emit(path, v.Interface())
	default:
		if set || !v.IsZero() {
			emit(path, v.Interface())
		}
	}
}

// yamlName is a struct field's YAML name.
func yamlName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(sf.Name)
	}
	return name
}

// fieldDigest is what the meta keeps of a field that is not
// state-relevant: the first 64 bits of SHA-256 over its path and JSON
// value, in hex.
func fieldDigest(path string, value []byte) string {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(value)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// planFields are the fields of p's spec, with the plan's time mode (the
// default resolved) for time.
func planFields(p *spec.Plan) specFields {
	s := *p.Spec
	s.Time = string(p.Time)
	return fieldsOf(&s, false)
}

// encodeMeta is p's meta in format metaFormat.
func encodeMeta(p *spec.Plan) []byte {
	f := planFields(p)
	m := jobMeta{Format: metaFormat, State: map[string]json.RawMessage{}, Other: f.other, Sinks: f.sinks}
	for k, v := range f.state {
		m.State[k] = json.RawMessage(v)
	}
	b, _ := json.Marshal(m) // plain data
	return b
}

// errForeignMeta is the refusal of a meta that no weir job wrote.
var errForeignMeta = errors.New("it was not written by this version of weir's job runner; start over with --fresh")

// resumeAcross compares the meta of the checkpoint a run restores (then)
// with the run's plan p. It returns what changed that a restore resumes
// across, as phrases for the run's info line ("a changed
// sinks.results.url", "an added sink sinks.late"), the sinks p adds (by
// name: late, results[1]), or an error naming
// what the checkpoint's state or positions depend on that changed: a
// state-relevant field (stateFields), a removed sink, a meta of an
// unknown format.
func resumeAcross(p *spec.Plan, then []byte) (across, added []string, err error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(then, &top) != nil {
		return nil, nil, errForeignMeta
	}
	raw, versioned := top["format"]
	if !versioned {
		return resumeAcrossV1(p, then)
	}
	var format int
	if json.Unmarshal(raw, &format) != nil || format < 2 {
		return nil, nil, errForeignMeta
	}
	if format > metaFormat {
		return nil, nil, fmt.Errorf("it was written by a newer weir, in job checkpoint format %d, and this weir reads formats 1 to %d; resume with that weir (or a later one), or start over with --fresh (the outputs start over too)", format, metaFormat)
	}
	var m jobMeta
	if json.Unmarshal(then, &m) != nil {
		return nil, nil, errForeignMeta
	}
	old := specFields{state: map[string]string{}, other: m.Other, sinks: m.Sinks}
	for k, v := range m.State {
		var c bytes.Buffer
		if json.Compact(&c, v) != nil {
			return nil, nil, errForeignMeta
		}
		old.state[k] = c.String()
	}
	if old.other == nil {
		old.other = map[string]string{}
	}
	return compareFields(old, planFields(p))
}

// resumeAcrossV1 is resumeAcross for a meta of format 1 (fingerprintV1),
// which held the sections it fingerprinted whole, under Go field names: it
// is decoded into those sections, and p is compared in the same form, so
// that the fields format 1 left out are left out on both sides. A meta
// that does not decode so (written by a weir whose sections had fields
// this one lacks) is compared section by section, as weir did before
// formats: every difference refuses.
func resumeAcrossV1(p *spec.Plan, then []byte) (across, added []string, err error) {
	now := fingerprintV1(p)
	old, ok := legacyFields(then)
	cur, ok2 := legacyFields(now)
	if !ok || !ok2 {
		return nil, nil, compareSections(now, then)
	}
	return compareFields(old, cur)
}

// legacySpec is the form of a format 1 meta.
type legacySpec struct {
	Time            string           `json:"time"`
	Source          spec.Source      `json:"source"`
	Watermark       spec.Watermark   `json:"watermark"`
	Key             []string         `json:"key"`
	Window          spec.Window      `json:"window"`
	AllowedLateness *spec.Duration   `json:"allowed_lateness"`
	Trigger         *spec.Trigger    `json:"trigger"`
	Aggregate       []spec.Aggregate `json:"aggregate"`
	Sinks           spec.Sinks       `json:"sinks"`
}

// legacyFields decodes a format 1 meta into its fields (fieldsOf with
// legacy); false when it holds a key or a field this weir does not know.
func legacyFields(b []byte) (specFields, bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil || len(keys) != reflect.TypeFor[legacySpec]().NumField() {
		return specFields{}, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var l legacySpec
	if d.Decode(&l) != nil {
		return specFields{}, false
	}
	s := spec.Spec{Time: l.Time, Source: l.Source, Watermark: l.Watermark, Key: l.Key, Window: l.Window,
		AllowedLateness: l.AllowedLateness, Trigger: l.Trigger, Aggregate: l.Aggregate, Sinks: l.Sinks}
	return fieldsOf(&s, true), true
}

// compareFields compares a checkpoint's fields (old) with the run's
// (now): see resumeAcross.
func compareFields(old, now specFields) (across, added []string, err error) {
	var removed []string
	for _, s := range now.sinks {
		if !slices.Contains(old.sinks, s) {
			added = append(added, s)
		}
	}
	for _, s := range old.sinks {
		if !slices.Contains(now.sinks, s) {
			removed = append(removed, s)
		}
	}
	// The fields of an added or removed sink are that sink's change.
	skip := func(path string) bool {
		for _, s := range slices.Concat(added, removed) {
			if strings.HasPrefix(path, "sinks."+s+".") {
				return true
			}
		}
		return false
	}
	// A field is compared by digest, so that one whose class differs
	// between the weir that wrote the checkpoint and this one compares
	// too; this weir's class decides.
	digest := func(f specFields, path string) string {
		if v, ok := f.state[path]; ok {
			return fieldDigest(path, []byte(v))
		}
		return f.other[path] // "" when not set
	}
	paths := map[string]bool{}
	for _, f := range []specFields{old, now} {
		for k := range f.state {
			paths[k] = true
		}
		for k := range f.other {
			paths[k] = true
		}
	}
	var refused, changed []string
	for path := range paths {
		if digest(old, path) == digest(now, path) || skip(path) {
			continue
		}
		if state, _ := fieldClass(path); state {
			refused = append(refused, path)
		} else {
			changed = append(changed, path)
		}
	}
	slices.Sort(refused)
	slices.Sort(changed)
	if len(refused) > 0 || len(removed) > 0 {
		var sections, details []string
		// The meta keeps the first results sink's fields at
		// sinks.results.*; beside others it is sinks.results[0] in the
		// spec.
		several := slices.Contains(old.sinks, spec.ResultsName(1)) || slices.Contains(now.sinks, spec.ResultsName(1))
		for _, f := range refused {
			sec, _, _ := strings.Cut(f, ".")
			sec, _, _ = strings.Cut(sec, "[")
			sections = append(sections, sec)
			if rest, ok := strings.CutPrefix(f, "sinks.results."); ok && several {
				f = "sinks." + spec.ResultsPath(0, 2) + "." + rest
			}
			details = append(details, f)
		}
		for _, s := range removed {
			sections = append(sections, "sinks")
			details = append(details, "sinks."+s+" removed")
		}
		slices.Sort(sections)
		sections = slices.Compact(sections)
		verb := "differ"
		if len(sections) == 1 && sections[0] != "sinks" {
			verb = "differs"
		}
		hint := ""
		if resultsReordered(old, now) {
			hint = "; its results sinks are this spec's in another order, and each keeps its progress under its place in the list: list them in the order they had"
		}
		return nil, nil, fmt.Errorf("it was written by a job whose %s %s from this spec's (%s)%s; restore with the spec that wrote it, or start over with --fresh (the outputs start over too)",
			strings.Join(sections, ", "), verb, strings.Join(details, ", "), hint)
	}
	for _, f := range changed {
		across = append(across, "a changed "+f)
	}
	slices.Sort(added)
	for _, s := range added {
		across = append(across, "an added sink sinks."+s)
	}
	return across, added, nil
}

// resultsReordered reports whether now's results sinks are old's, with
// the same state-relevant fields, in another order.
func resultsReordered(old, now specFields) bool {
	sinks := func(f specFields) []string {
		by := map[string][]string{} // sink name -> its fields, as tail=value
		for path, v := range f.state {
			rest, ok := strings.CutPrefix(path, "sinks.results")
			if !ok {
				continue
			}
			name, tail, _ := strings.Cut(rest, ".") // "" or "[i]"
			by[name] = append(by[name], tail+"="+v)
		}
		var out []string
		for _, name := range slices.Sorted(maps.Keys(by)) {
			slices.Sort(by[name])
			out = append(out, strings.Join(by[name], "\x00"))
		}
		return out
	}
	a, b := sinks(old), sinks(now)
	if len(a) < 2 || slices.Equal(a, b) {
		return false
	}
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// phrase joins the parts of an info line: "a, b and c".
func phrase(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// fingerprintV1 is the meta of format 1, which weir wrote before formats
// were numbered: the sections the state depends on, whole, as JSON (Go
// field names; the source without final_watermark). It is kept to read
// such checkpoints: resumeAcrossV1 compares a run's spec in this form.
func fingerprintV1(p *spec.Plan) []byte {
	s := p.Spec
	src := s.Source
	src.FinalWatermark = nil
	m := map[string]any{
		"time": p.Time, "source": src, "watermark": s.Watermark, "key": s.Key, "window": s.Window,
		"allowed_lateness": s.AllowedLateness, "trigger": s.Trigger, "aggregate": s.Aggregate, "sinks": s.Sinks,
	}
	b, _ := json.Marshal(m)
	return b
}

// compareSections is how weir compared metas before formats: it names
// the sections in which the checkpoint's spec differs, and refuses any.
func compareSections(now, then []byte) error {
	var a, b map[string]json.RawMessage
	if json.Unmarshal(now, &a) != nil || json.Unmarshal(then, &b) != nil {
		return errForeignMeta
	}
	var diff []string
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			diff = append(diff, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, k)
		}
	}
	if len(diff) == 0 {
		return nil
	}
	slices.Sort(diff)
	return fmt.Errorf("it was written by a job whose %s differ from this spec's; restore with the spec that wrote it, or start over with --fresh (the outputs start over too)",
		strings.Join(diff, ", "))
}
