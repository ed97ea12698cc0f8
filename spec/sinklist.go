package spec

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// SinkList is one sink or several. In YAML and JSON one sink is written
// as a mapping (an object), as specs were before several could be given,
// and several as a list; a list of one reads as one sink.
type SinkList []*Sink

// MarshalJSON writes no sink as null, one as an object and several as a
// list, so that a spec with one results sink marshals as it did when
// Results was a *Sink.
func (l SinkList) MarshalJSON() ([]byte, error) {
	switch len(l) {
	case 0:
		return []byte("null"), nil
	case 1:
		return json.Marshal(l[0])
	}
	return json.Marshal([]*Sink(l))
}

// UnmarshalJSON reads what MarshalJSON writes. It refuses a field that
// Sink lacks, as a decoder with DisallowUnknownFields would (that option
// does not reach through an Unmarshaler).
func (l *SinkList) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	if bytes.Equal(t, []byte("null")) {
		*l = nil
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(t))
	d.DisallowUnknownFields()
	if len(t) > 0 && t[0] == '{' {
		var k Sink
		if err := d.Decode(&k); err != nil {
			return err
		}
		*l = SinkList{&k}
		return nil
	}
	return d.Decode((*[]*Sink)(l))
}

// ResultsName is the name of the i-th sink of the results list: results for the
// first, results[i] for the others. Checkpoints record each sink's
// progress under it, so that a job that gains a second results sink
// resumes with its first one's.
func ResultsName(i int) string {
	if i == 0 {
		return "results"
	}
	return "results[" + strconv.Itoa(i) + "]"
}

// ResultsPath is the spec path of the i-th of n results sinks, for
// messages: results when there is one, results[i] in a list of several
// (the first of a list is results[0] there, and results in checkpoints:
// ResultsName).
func ResultsPath(i, n int) string {
	if n == 1 {
		return "results"
	}
	return "results[" + strconv.Itoa(i) + "]"
}

// Primary is the first results sink (nil when there is none: Compile
// gives every plan one): the one weir backfill revises and the complete
// answer is compared with.
func (s *Sinks) Primary() *Sink {
	if len(s.Results) == 0 {
		return nil
	}
	return s.Results[0]
}

// First returns the first sink of type typ in l, or nil: the one kafka
// results sink of a job (Compile refuses a second), say.
func (l SinkList) First(typ string) *Sink {
	for _, k := range l {
		if k != nil && k.Type == typ {
			return k
		}
	}
	return nil
}
