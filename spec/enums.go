package spec

// The plan's enumerations. They are strings underneath, with the spec's
// spelling, so that what checkpoints and ledger entries hash from them
// (the job meta, a backfill's spec hash) stays what it was.

// TimeMode is the job's time semantics (R1).
type TimeMode string

const (
	EventTime      TimeMode = "event"
	ProcessingTime TimeMode = "processing"
	IngestionTime  TimeMode = "ingestion"
)

// Format is how a line source frames its records.
type Format string

const (
	FormatJSONL Format = "jsonl" // a JSON object per line
	FormatCSV   Format = "csv"   // a header row names the fields
)

// TimeUnit is how a record's timestamp field counts.
type TimeUnit string

const (
	UnitMillis  TimeUnit = "ms"
	UnitSeconds TimeUnit = "s"
	UnitMicros  TimeUnit = "us"
	UnitNanos   TimeUnit = "ns"
	UnitRFC3339 TimeUnit = "rfc3339" // text, such as 2026-01-01T00:00:00Z
)

// WatermarkType is the watermark strategy (R3).
type WatermarkType string

const (
	BoundedOutOfOrderness WatermarkType = "bounded_out_of_orderness"
	Monotonous            WatermarkType = "monotonous"
	Punctuated            WatermarkType = "punctuated" // the replay lines' $watermark only
)

// Backend is where window state lives (R12).
type Backend string

const (
	MemoryBackend Backend = "memory"
	PebbleBackend Backend = "pebble"
)

// enum checks an enum field as oneOf does and returns it typed.
func enum[T ~string](c *compiler, path, v string, def T, allowed ...T) T {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return T(c.oneOf(path, v, string(def), names...))
}
