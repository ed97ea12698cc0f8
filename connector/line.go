package connector

import (
	"fmt"

	"github.com/weirstream/weir/etime"
)

// LineKind is the kind of a Line.
type LineKind uint8

// The kinds of lines.
const (
	// Data is a record: Text is a JSON object (not validated for JSON lines
	// without control keys).
	Data LineKind = iota
	// Watermark is a {"$watermark": N} control line: Watermark holds N.
	Watermark
	// Idle is a {"$idle": true} control line.
	Idle
	// Bad is input that cannot become a record: Reason and Detail say why,
	// Text holds the raw line (at most a reader's longest line).
	Bad
)

// String returns the kind's name.
func (k LineKind) String() string {
	switch k {
	case Data:
		return "data"
	case Watermark:
		return "watermark"
	case Idle:
		return "idle"
	case Bad:
		return "bad"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Line is one record of a source as read, before a job decodes it: a line
// (or CSV row) of a file, a generated record, a Kafka record's or a NATS
// message's value. What a registered source kind opens
// (SourceKind.Open) emits Lines. A Line is a value; its Text is owned by
// the Line (never reused by the reader), so a Line may be kept and sent
// to other goroutines.
type Line struct {
	// Kind is what the line is.
	Kind LineKind
	// Channel is the source channel the line belongs to (and that emits it).
	Channel int
	// No is the line's position in its input, 1-based: the line number of
	// a file (for a CSV row, the line where the row starts), a generated
	// record's number, a NATS stream sequence, a Kafka offset + 1.
	No int64
	// Split is the input of the channel the line came from, for a source
	// kind that reads several per channel (SourceKind.Splits: a Kafka
	// partition); 0 otherwise.
	Split int32
	// Time is the time the broker gave the record (a Kafka record's
	// timestamp, a JetStream publish time), for a job whose event time
	// it is; 0 for sources without one.
	Time etime.Time
	// Text is the record (Data) or the raw line (Bad); nil for Watermark
	// and Idle lines, and for a data line whose record is Typed.
	Text []byte
	// Raw is the input as read when it differs from Text: a data line
	// whose $ keys were removed, or a CSV row (Text is its JSON object).
	// It is nil otherwise; dead letters report Raw when it is set.
	Raw []byte
	// Watermark is the watermark of a Watermark line.
	Watermark etime.Time
	// Reason is a stable code for a Bad line: line_too_long, utf8_invalid,
	// channel_invalid, control_invalid or csv_malformed.
	Reason string
	// Detail explains a Bad line to a person.
	Detail string
	// Unchecked says Text did not come through a reader that turns
	// invalid UTF-8 into Bad lines (a Kafka or NATS record, a ledger
	// entry): whoever decodes it checks it.
	Unchecked bool
	// Valid says Text is a JSON object that the source rendered itself
	// (valid JSON in UTF-8, as the nexmark source writes its events):
	// whoever decodes it need not check it again.
	Valid bool
	// Typed, when set, is a data line's record as typed columns
	// (SourceKind.Columns), made by a source kind that has them rather
	// than text: Text is then nil, and whoever needs the text renders it
	// (TypedRecord.AppendJSON). It is immutable once emitted: like Text,
	// it may be kept and sent to other goroutines.
	Typed TypedRecord
}

// Data returns a data line's record as JSON text: Text, or its typed
// record rendered (an allocation) when it has no Text.
func (l Line) Data() []byte {
	if l.Text == nil && l.Typed != nil {
		return l.Typed.AppendJSON(nil)
	}
	return l.Text
}

// TypedRecord is a record as typed columns: the values of the columns its source
// kind declares (SourceKind.Columns), by index. Its values are what its
// JSON text (AppendJSON) holds at the column's path, so that a job reads
// either form alike: a missing or null member (or a member of a null
// object) is ValueNull.
type TypedRecord interface {
	// Column returns the value of column c of the kind's Columns.
	Column(c int) Value
	// AppendJSON appends the record as the JSON object (valid JSON in
	// UTF-8) that a source without typed records would emit as Text.
	AppendJSON(b []byte) []byte
}

// TypedColumn is a column of a source kind's typed records: its path in
// their JSON form (a nested object's member as object.member) and the
// kind its values have when they are not ValueNull.
type TypedColumn struct {
	Name string
	Kind ValueKind
}

// ValueKind is the kind of a typed column's Value.
type ValueKind uint8

// The kinds of values.
const (
	ValueNull   ValueKind = iota
	ValueInt              // Value.Int: a JSON integer
	ValueString           // Value.Str: a JSON string's text (unescaped)
)

// Value is a typed column's value in a TypedRecord.
type Value struct {
	Kind ValueKind
	Int  int64
	Str  string
}

// Liner is implemented by what a source sends to the dead letters in a
// form of its own (a Kafka record): Line gives it as the Line it would
// have emitted, so that a runner reports every dead letter alike.
type Liner interface {
	Line() Line
}
