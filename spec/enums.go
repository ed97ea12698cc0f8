package spec

// The plan's enumerations. They are strings underneath, with the spec's
// spelling, so that what checkpoints and ledger entries hash from them
// (the job meta, a backfill's spec hash) stays what it was.

// TimeMode is the job's time semantics (R1).
type TimeMode string

// The time modes.
const (
	EventTime      TimeMode = "event"      // the records' timestamps (the default)
	ProcessingTime TimeMode = "processing" // the clock when a window operator sees a record
	IngestionTime  TimeMode = "ingestion"  // the clock when the source reads a record
)

// Format is how a line source frames its records.
type Format string

// The line formats.
const (
	FormatJSONL Format = "jsonl" // a JSON object per line
	FormatCSV   Format = "csv"   // a header row names the fields
)

// TimeUnit is how a record's timestamp field counts.
type TimeUnit string

// The timestamp units.
const (
	UnitMillis  TimeUnit = "ms" // the default
	UnitSeconds TimeUnit = "s"
	UnitMicros  TimeUnit = "us"
	UnitNanos   TimeUnit = "ns"
	UnitRFC3339 TimeUnit = "rfc3339" // text, such as 2026-01-01T00:00:00Z
	// UnitSQL reads a SQL TIMESTAMP(3) as Flink's JSON format writes it
	// (2026-01-01 00:00:05.000, or with a T; a TIMESTAMP_LTZ's with a
	// Z), in UTC, or a number of milliseconds.
	UnitSQL TimeUnit = "sql"
)

// WatermarkType is the watermark strategy (R3).
type WatermarkType string

// The watermark strategies.
const (
	BoundedOutOfOrderness WatermarkType = "bounded_out_of_orderness" // the default
	Monotonous            WatermarkType = "monotonous"
	Punctuated            WatermarkType = "punctuated" // the replay lines' $watermark only
	// StrictlyAscending emits the largest timestamp itself (Flink SQL's
	// WATERMARK FOR t AS t); its plan's Bound is -1 ms.
	StrictlyAscending WatermarkType = "strictly_ascending"
)

// WindowKind is the window assigner's kind.
type WindowKind string

// The window kinds.
const (
	Tumbling WindowKind = "tumbling"
	Sliding  WindowKind = "sliding"
	Cumulate WindowKind = "cumulate"
	Session  WindowKind = "session"
	Global   WindowKind = "global"
)

// Backend is where window state lives (R12).
type Backend string

// The state backends.
const (
	MemoryBackend Backend = "memory" // Go maps (the default)
	PebbleBackend Backend = "pebble" // on disk, behind a cache of live windows
)

// DefaultBacklogEvery is watermark.backlog_every's default, the engine's
// weir.DefaultBacklogWatermarkEvery (spec does not import the engine; a
// test of package job checks that the two agree).
const DefaultBacklogEvery = 1000

// enum checks an enum field as oneOf does and returns it typed.
func enum[T ~string](c *compiler, path, v string, def T, allowed ...T) T {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return T(c.oneOf(path, v, string(def), names...))
}
