package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Definition is a job's definition as its front end wrote it, for what
// records the definition rather than runs it: the checkpoint meta, which
// tells a restore under a changed definition what changed and whether
// the checkpointed state still means what it meant
// (docs/format/checkpoint.md, "Changing a job"), and the ledger's spec
// hash.
type Definition struct {
	// Fields are the definition's set leaf fields, sorted by path (a YAML
	// spec's: window.size, sinks.results.url, aggregate[1].fn), each with
	// its JSON value and class.
	Fields []DefField
	// Sinks names the sinks the job writes: results, late, late_partial,
	// dead_letter, results[1], ...
	Sinks []string
	// V1 is a YAML spec in the form of the checkpoint meta of format 1,
	// which weir wrote before formats were numbered: the sections the
	// state depends on, whole, as JSON under Go field names (the source
	// without final_watermark). Nil for other front ends.
	V1 []byte
	// Window is the window as the definition gave it, as JSON.
	Window []byte
}

// DefField is a field of a Definition.
type DefField struct {
	Path  string
	Value []byte // JSON
	// State: the checkpointed state or positions depend on the field
	// (FieldClass), so a restore refuses to see it changed.
	State bool
}

// definition is the plan's Definition: the compiled spec's fields, with
// the plan's time mode (the default resolved) for time.
func (c *compiler) definition() Definition {
	s := *c.s
	s.Time = string(c.p.Time)
	var d Definition
	d.Fields, d.Sinks = definitionOf(&s, false)
	src := s.Source
	src.FinalWatermark = nil
	d.V1, _ = json.Marshal(map[string]any{
		"time": c.p.Time, "source": src, "watermark": s.Watermark, "key": s.Key, "window": s.Window,
		"allowed_lateness": s.AllowedLateness, "trigger": s.Trigger, "aggregate": s.Aggregate, "sinks": s.Sinks,
	}) // plain data
	d.Window, _ = json.Marshal(s.Window)
	return d
}

// legacySpec is the form of a format 1 meta (Definition.V1).
type legacySpec struct {
	Time            string      `json:"time"`
	Source          Source      `json:"source"`
	Watermark       Watermark   `json:"watermark"`
	Key             []string    `json:"key"`
	Window          Window      `json:"window"`
	AllowedLateness *Duration   `json:"allowed_lateness"`
	Trigger         *Trigger    `json:"trigger"`
	Aggregate       []Aggregate `json:"aggregate"`
	Sinks           Sinks       `json:"sinks"`
}

// LegacyFields decodes a format 1 meta (Definition.V1) into its fields
// and sinks, leaving out what format 1 did not record; false when it
// holds a key or a field this weir does not know.
func LegacyFields(b []byte) (fields []DefField, sinks []string, ok bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil || len(keys) != reflect.TypeFor[legacySpec]().NumField() {
		return nil, nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var l legacySpec
	if d.Decode(&l) != nil {
		return nil, nil, false
	}
	s := Spec{Time: l.Time, Source: l.Source, Watermark: l.Watermark, Key: l.Key, Window: l.Window,
		AllowedLateness: l.AllowedLateness, Trigger: l.Trigger, Aggregate: l.Aggregate, Sinks: l.Sinks}
	fields, sinks = definitionOf(&s, true)
	return fields, sinks, true
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

	"source.type":                     true,
	"source.path":                     true,
	"source.format":                   true,
	"source.csv_columns":              false,
	"source.channels":                 true,
	"source.final_watermark":          false,
	"source.timestamp":                true,
	"source.numbers_in_strings":       true,
	"source.decimals":                 true,
	"source.types":                    true,
	"source.generator":                true,
	"source.nexmark":                  true,
	"source.kafka.topic":              true,
	"source.kafka.brokers":            false,
	"source.kafka.group":              false,
	"source.kafka.start":              false,
	"source.kafka.stop_at_end":        false,
	"source.kafka.partitioned_by_key": true,
	"source.kafka.tls":                false,
	"source.kafka.sasl":               false,
	"source.nats.stream":              true,
	"source.nats.subjects":            true,
	"source.nats.url":                 false,
	"source.nats.start":               false,
	"source.nats.stop_at_end":         false,

	"watermark":            true,
	"where":                true,
	"having":               false,
	"computed":             true,
	"key":                  true,
	"null_keys":            true,
	"window":               true,
	"time_zone":            true,
	"allowed_lateness":     true,
	"late_firing_interval": false,
	"two_phase":            false,
	"skip_unchanged":       false,
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
	"sinks.*.columns":           true,
	"sinks.*.layout":            true,
	"sinks.*.primary_key":       true,

	"checkpoint": false,
	"group":      false,
	"state":      false,
	"alerts":     false,
	"archive":    false,
	"doctor":     false,
}

// FieldClass is the class of the field at path (stateFields): whether
// the checkpointed state or positions depend on it, and the listed prefix
// it takes its class from ("" when none is listed).
func FieldClass(path string) (state bool, rule string) {
	p := normalPath(path)
	if name, ok := strings.CutPrefix(p, "sinks.*."); ok && !IsSinkField(strings.Split(name, ".")[0]) {
		// A registered kind's own setting (Sink.Extra), like a
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

// definitionOf flattens s into its leaf fields, by the YAML path of
// each, and names its sinks. A field that is not set (a nil pointer, or a
// zero value not behind a pointer) has no entry; a list of objects has
// one per element (aggregate[2].fn), a list of values one for the list.
// With legacy, the fields format 1 left out (json:"-") are left out too.
func definitionOf(s *Spec, legacy bool) (fields []DefField, sinks []string) {
	emit := func(path string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprint(v))) // not reached: the spec's fields are plain data
		}
		state, _ := FieldClass(path)
		fields = append(fields, DefField{Path: path, Value: b, State: state})
	}
	flatten(reflect.ValueOf(s).Elem(), "", false, legacy, emit)
	sv := reflect.ValueOf(s.Sinks)
	for i := range sv.NumField() {
		if !sv.Field(i).IsNil() {
			sinks = append(sinks, fieldName(sv.Type().Field(i)))
		}
	}
	for i := 1; i < len(s.Sinks.Results); i++ {
		sinks = append(sinks, ResultsName(i))
	}
	slices.SortFunc(fields, func(a, b DefField) int { return strings.Compare(a.Path, b.Path) })
	return fields, sinks
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
			name := fieldName(sf)
			if !sf.IsExported() || name == "-" || legacy && sf.Tag.Get("json") == "-" {
				continue
			}
			flatten(v.Field(i), join(name), false, legacy, emit)
		}
		var extra map[string]any
		switch k := v.Interface().(type) {
		case Sink:
			extra = k.Extra
		case Source:
			extra = k.Extra
		}
		if !legacy {
			// A kind's own settings, by their names as the spec gave them.
			for _, name := range slices.Sorted(maps.Keys(extra)) {
				emit(join(name), extra[name])
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		if v.Type() == reflect.TypeFor[SinkList]() {
			// The first results sink's fields are at sinks.results.*, as
			// when a job had one only; the others' at sinks.results[i].*.
			for i := range v.Len() {
				flatten(v.Index(i), strings.TrimSuffix(path, "results")+ResultsName(i), true, legacy, emit)
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

// fieldName is a struct field's YAML name (its lower-cased Go name
// without a yaml tag).
func fieldName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(sf.Name)
	}
	return name
}
