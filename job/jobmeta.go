package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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

// specFields is what a restore compares of two specs: the state-relevant
// fields by path with their JSON values, the other fields by path with
// their digests, and the sinks by name.
type specFields struct {
	state map[string]string
	other map[string]string
	sinks []string
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

// planFields are the fields of p's definition.
func planFields(p *spec.Plan) specFields {
	return metaFields(p.Definition.Fields, p.Definition.Sinks)
}

// metaFields are fields and sinks as a meta keeps them: the state-relevant
// fields' values, the other fields' digests.
func metaFields(fields []spec.DefField, sinks []string) specFields {
	f := specFields{state: map[string]string{}, other: map[string]string{}, sinks: sinks}
	for _, d := range fields {
		if d.State {
			f.state[d.Path] = string(d.Value)
		} else {
			f.other[d.Path] = fieldDigest(d.Path, d.Value)
		}
	}
	return f
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

// metaJob is the job name a meta of format 2 or later records (false:
// another meta).
func metaJob(meta []byte) (string, bool) {
	var m jobMeta
	if json.Unmarshal(meta, &m) != nil || m.Format < 2 {
		return "", false
	}
	var name string
	if json.Unmarshal(m.State["name"], &name) != nil {
		return "", false
	}
	return name, true
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

// legacyFields decodes a format 1 meta into its fields
// (spec.LegacyFields); false when it holds a key or a field this weir
// does not know.
func legacyFields(b []byte) (specFields, bool) {
	fields, sinks, ok := spec.LegacyFields(b)
	if !ok {
		return specFields{}, false
	}
	return metaFields(fields, sinks), true
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
			return fieldDigest(path, cleanPath(path, []byte(v)))
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
		if state, _ := spec.FieldClass(path); state {
			refused = append(refused, path)
		} else {
			changed = append(changed, path)
		}
	}
	slices.Sort(refused)
	slices.Sort(changed)
	if len(refused) > 0 || len(removed) > 0 {
		several := slices.Contains(old.sinks, spec.ResultsName(1)) || slices.Contains(now.sinks, spec.ResultsName(1))
		return nil, nil, &changedError{refused: refused, removed: removed, several: several, reordered: resultsReordered(old, now)}
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

// changedError is compareFields' refusal: the state-relevant fields that
// differ (refused, by path) and the sinks the checkpoint's job had that
// the spec has not (removed).
type changedError struct {
	refused, removed []string
	// several: either side has several results sinks; reordered: the
	// spec's results sinks are the checkpoint's in another order.
	several, reordered bool
}

// what names what differs: the sections ("window", "sinks") with a verb,
// and the fields in detail.
func (e *changedError) what(removedSinks bool) (sections, verb, details string) {
	var secs, dets []string
	for _, f := range e.refused {
		sec, _, _ := strings.Cut(f, ".")
		sec, _, _ = strings.Cut(sec, "[")
		secs = append(secs, sec)
		// The meta keeps the first results sink's fields at
		// sinks.results.*; beside others it is sinks.results[0] in the
		// spec.
		if rest, ok := strings.CutPrefix(f, "sinks.results."); ok && e.several {
			f = "sinks." + spec.ResultsPath(0, 2) + "." + rest
		}
		dets = append(dets, f)
	}
	if removedSinks {
		for _, s := range e.removed {
			secs = append(secs, "sinks")
			dets = append(dets, "sinks."+s+" removed")
		}
	}
	slices.Sort(secs)
	secs = slices.Compact(secs)
	verb = "differ"
	if len(secs) == 1 && secs[0] != "sinks" {
		verb = "differs"
	}
	return strings.Join(secs, ", "), verb, strings.Join(dets, ", ")
}

func (e *changedError) Error() string {
	sections, verb, details := e.what(true)
	hint := ""
	if e.reordered {
		hint = "; its results sinks are this spec's in another order, and each keeps its progress under its place in the list: list them in the order they had"
	}
	return fmt.Sprintf("it was written by a job whose %s %s from this spec's (%s)%s; restore with the spec that wrote it, or start over with --fresh (the outputs start over too)",
		sections, verb, details, hint)
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
func fingerprintV1(p *spec.Plan) []byte { return p.Definition.V1 }

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

// cleanPath is a state field's JSON value, a file path's cleaned
// (./out.jsonl and out.jsonl name one file: a run resumes across the
// spelling).
func cleanPath(path string, v []byte) []byte {
	if !strings.HasSuffix(path, ".path") {
		return v
	}
	var p string
	if json.Unmarshal(v, &p) != nil || p == "" {
		return v
	}
	b, _ := json.Marshal(filepath.Clean(p)) // a string
	return b
}
