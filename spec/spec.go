// Package spec is weir's declarative job: the YAML (or JSON) job spec, its
// loader, which reports every error with its field path and a fix, and the
// compiler that turns a spec into a Plan. It does no I/O: package job runs
// a plan.
//
// The field names below are the YAML names (the `yaml` tags). Durations
// accept a string such as "250ms" or "10m", or an integer number of
// milliseconds; on the event-time axis they are int64 milliseconds and
// saturate, so a lateness of 9223372036854775807 is valid.
package spec

// Spec is one job.
type Spec struct {
	// Warnings are what Load found questionable but not wrong, such as a
	// bare number read as milliseconds (not part of the YAML).
	Warnings Errors `yaml:"-"`
	// Name names the job in logs and summaries.
	Name string `yaml:"name"`
	// Time is the job's time semantics (R1): event (default), processing or
	// ingestion.
	Time string `yaml:"time"`
	// Source says where records come from.
	Source Source `yaml:"source"`
	// Watermark says how event-time watermarks are generated.
	Watermark Watermark `yaml:"watermark"`
	// Computed are fields computed from each record before anything
	// reads it, in order: the timestamp field, the key, the aggregates'
	// fields and where may name them. Each is an expression in SQL's
	// syntax over the record's fields and the computed fields before it
	// (a later one of the same name as a field replaces it from there
	// on: a SQL view's column).
	Computed []ComputedField `yaml:"computed" json:",omitempty"`
	// Where keeps only the records for which this expression, in SQL's
	// syntax over the record's fields, is true (such as "amount > 100 AND
	// region IN ('eu', 'us')"; internal/expr says what it may hold). A
	// record it drops is counted in the summary's filtered; it moved
	// the watermark before it was dropped, as a row a Flink SQL WHERE
	// drops did, but its key and aggregate fields are not read: a record
	// without the key is no dead letter when the where drops it.
	Where string `yaml:"where" json:",omitempty"`
	// Having keeps only the window's results for which this expression,
	// in SQL's syntax over the key fields, the aggregates (by name) and
	// the window's bounds (window_start, window_end, window_time: epoch
	// milliseconds, which a TIMESTAMP '...' literal compares with),
	// is true (such as "orders > 3"), as SQL's HAVING: a result it drops
	// is counted in the summary's having_filtered, is not written, and
	// no window fed by this one reads it. The window must fire each
	// window once (no allowed lateness, the default or final trigger):
	// a later firing could not take back a row the filter let through.
	Having string `yaml:"having" json:",omitempty"`
	// Key lists the fields that key the windows; empty means one key for
	// every record.
	Key []string `yaml:"key"`
	// NullKeys: a record whose key field is missing or null is keyed by
	// null there (its windows are those of the null key), as SQL's GROUP
	// BY groups NULLs; false (the default): it is a dead letter
	// (key_missing). A SQL job sets it.
	NullKeys bool `yaml:"null_keys"`
	// Window is the window assigner.
	Window Window `yaml:"window"`
	// TimeZone (an IANA name such as Asia/Shanghai, UTC, or an offset
	// such as +08:00) cuts tumbling, sliding and cumulate windows by that
	// zone's wall clock (a day's window starts at its midnight) and shows
	// window_start and window_end as its wall time wherever a row writes
	// them as text (time: timestamp or date) or an expression reads them;
	// epoch milliseconds stay instants. A SQL job sets it from
	// table.local-time-zone for windows over a TIMESTAMP_LTZ, as Flink
	// cuts them. Only zones without daylight saving (one offset all
	// year). Left out of the spec's JSON when unset, so that the spec
	// hash of every other job stays as it was.
	TimeZone string `yaml:"time_zone" json:",omitempty"`
	// AllowedLateness keeps window state this long after the window's end
	// (semantics B2, B3).
	AllowedLateness *Duration `yaml:"allowed_lateness"`
	// LateFiringInterval throttles late firings (W11): a window fires at
	// most once per this much processing time for its late records, and
	// a pending firing is emitted when the window is cleaned up. Default
	// 0: a late firing per late record.
	LateFiringInterval *Duration `yaml:"late_firing_interval"`
	// Trigger replaces the window's default trigger.
	Trigger *Trigger `yaml:"trigger"`
	// TwoPhase pre-aggregates each source subtask's records per key and
	// window before the keyed exchange, then merges the partial
	// aggregates per key (local-global aggregation, the cure for a hot
	// key): the same results, panes, late decisions and counters, with a
	// hot key's work spread over the subtasks (weir.WindowOptions.TwoPhase).
	// Tumbling and sliding windows with the event-time, continuous or
	// final trigger, and aggregates that merge exactly (count, sum and
	// avg not of type float, min, max, count_distinct). Left out of the
	// spec hash: it changes no result.
	TwoPhase bool `yaml:"two_phase" json:",omitempty"`
	// SkipUnchanged skips early and late firings whose result equals the
	// window's last emitted one, as Flink SQL's early and late firings
	// emit only changed updates (W20; weir.WindowOptions.SkipUnchanged):
	// such a firing writes no row and takes no pane index. On-time
	// firings always write. A SQL job sets it for windows with early
	// firings or allowed lateness. Not with a purging trigger.
	SkipUnchanged bool `yaml:"skip_unchanged" json:",omitempty"`
	// Aggregate lists the per-window aggregates, in output order.
	Aggregate []Aggregate `yaml:"aggregate"`
	// Sinks says where results, late records and dead letters go.
	Sinks Sinks `yaml:"sinks"`
	// Checkpoint enables checkpoints, from which a run resumes after a
	// crash with exactly the outputs of a run that never crashed (R13).
	Checkpoint *CheckpointSpec `yaml:"checkpoint"`
	// State chooses where window state lives (R12).
	State *StateSpec `yaml:"state"`
	// Group configures group mode (weir run --instance): the consumer
	// group the members share and their timings.
	Group *GroupSpec `yaml:"group"`
	// Alerts sets the share of too-late records (side output and dropped)
	// above which the job warns: in its log, in weir_late_ratio against
	// weir_late_ratio_warning and weir_late_ratio_critical, and for
	// Prometheus alert rules.
	Alerts *AlertsSpec `yaml:"alerts"`
	// Archive keeps the newest revision of each window of a job whose
	// results go to a jsonl file or a Kafka topic, so that weir backfill
	// can fold too-late records into windows the job has closed (SQL
	// results keep it in their rows).
	Archive *ArchiveSpec `yaml:"archive"`
	// Doctor overrides the thresholds weir doctor judges the job by;
	// unset fields follow the job's own bound, window and idle timeout.
	Doctor *DoctorSpec `yaml:"doctor"`
}

// ArchiveSpec configures the archive of closed windows.
type ArchiveSpec struct {
	// Dir is the archive's directory (relative to the spec's).
	Dir string `yaml:"dir"`
	// Horizon is how long after the watermark passed a window's end it
	// is kept (default 7d); later, backfill reports its entries as
	// beyond the horizon.
	Horizon *Duration `yaml:"horizon"`
}

// AlertsSpec are the job's alert thresholds.
type AlertsSpec struct {
	// LateRatio is the warning level (default 0.001: seed 002 of
	// docs/SOURCES.md saw under 0.1% of traffic late in production);
	// LateRatioCritical the critical one (default 0.01).
	LateRatio         float64 `yaml:"late_ratio"`
	LateRatioCritical float64 `yaml:"late_ratio_critical"`
}

// DoctorSpec are weir doctor's thresholds for this job.
type DoctorSpec struct {
	// LagHigh: lag above it is high (default bound + max(window, 30s)).
	LagHigh *Duration `yaml:"lag_high"`
	// LateRise: the late rate of the last 2 minutes above this many
	// times its usual rate is a jump (default 3)...
	LateRise float64 `yaml:"late_rise"`
	// ...if it is also above this share of the input (default 0.001).
	LateMinShare float64 `yaml:"late_min_share"`
	// BusyHigh: an operator busier than this fraction is a bottleneck
	// (default 0.9).
	BusyHigh float64 `yaml:"busy_high"`
	// SkewHigh: more skew of records over subtasks is high (default 0.5).
	SkewHigh float64 `yaml:"skew_high"`
	// Future: event time this far ahead of the clock is future-dated
	// (default max(5m, bound)).
	Future *Duration `yaml:"future"`
	// Hold: an input holding the watermark longer is held up (default
	// the window size, within max(idle_timeout, 10s) and at least
	// max(2 × bound, 5s)).
	Hold *Duration `yaml:"hold"`
	// NoWatermark: records were read but an input that has sent none
	// holds the watermark at none this long (default 5s).
	NoWatermark *Duration `yaml:"no_watermark"`
	// IdleFlips: more idle/active changes of an input in 10 minutes are
	// flapping (default 3).
	IdleFlips int `yaml:"idle_flips"`
	// CheckpointDelay: a checkpoint start delay above it is high
	// (default 10s).
	CheckpointDelay *Duration `yaml:"checkpoint_delay"`
}

// StateSpec chooses the state backend.
type StateSpec struct {
	// Backend is memory (default: Go maps) or pebble (on disk, behind a
	// cache of live windows).
	Backend string `yaml:"backend"`
	// Dir is the pebble backend's scratch directory (default: a new
	// directory in the system's temporary directory, removed at the end);
	// checkpoints, not this directory, make state durable.
	Dir string `yaml:"dir"`
	// Cache is the number of live windows each operator instance keeps
	// decoded in memory with the pebble backend (default 100000).
	Cache int `yaml:"cache"`
	// Budget, when set, is the window state size (encoded keys and
	// values, summed over subtasks) above which the job warns, such as
	// 512MiB or 2GB (an integer is bytes).
	Budget *ByteSize `yaml:"budget"`
}

// ByteSize is a size in bytes, written as an integer or a number with a
// unit: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers
// of 1024).
type ByteSize int64

// GroupSpec configures group mode (weir run --instance).
type GroupSpec struct {
	// Name is the consumer group of the members (default weir-<job
	// name>); its changelog topic is <name>-changelog.
	Name string `yaml:"name"`
	// CommitInterval is how often a member commits its transaction
	// (default 200ms): results are visible to read_committed readers
	// that much later at most.
	CommitInterval *Duration `yaml:"commit_interval"`
	// SessionTimeout is how long the group waits for a member that
	// stopped answering before its tasks move (default 10s).
	SessionTimeout *Duration `yaml:"session_timeout"`
	// TransactionTimeout is how long the brokers keep a dead member's
	// open transaction before aborting it (default 10s).
	TransactionTimeout *Duration `yaml:"transaction_timeout"`
}

// CheckpointSpec configures checkpoints.
type CheckpointSpec struct {
	// Dir holds the checkpoints (relative to the spec's directory).
	Dir string `yaml:"dir"`
	// Interval between checkpoints (default 5s).
	Interval *Duration `yaml:"interval"`
	// Retain is how many complete checkpoints are kept (nil: 3).
	Retain *int `yaml:"retain"`
	// MaxBuffered bounds the output (results, late records, dead
	// letters) held in memory for checkpoints that have not committed
	// (default DefaultMaxBuffered): while a checkpoint's commit waits for
	// a sink, subtasks that would buffer more wait too, so the queues fill
	// and the sources stop reading; at half of it with no commit under
	// way, a checkpoint is taken early, so that its commit has begun
	// before the bound is reached (what the subtasks emit while its
	// barriers pass, beyond the other half, is held too until it begins).
	MaxBuffered int `yaml:"max_buffered"`
	// AfterFiring: a window's early or on-time firing asks for a
	// checkpoint at once (unless one that covers it has begun), so its
	// results commit, and show in an exactly-once sink, one checkpoint's
	// time after the watermark passed instead of up to Interval later.
	// Late firings, late records and dead letters wait for the interval.
	AfterFiring bool `yaml:"after_firing"`
	// MinPause is the least time from the end of one checkpoint to the
	// start of the next periodic or after_firing one (default 0: none),
	// as Flink's execution.checkpointing.min-pause: it spaces the
	// checkpoints that after_firing asks for when firings come often.
	MinPause *Duration `yaml:"min_pause"`
}

// DefaultMaxBuffered is checkpoint.max_buffered's default.
const DefaultMaxBuffered = 100_000

// Source is the job's input.
type Source struct {
	// Type is file, stdin, generator, kafka or nats.
	Type string `yaml:"type"`
	// Path is the input file (type file).
	Path string `yaml:"path"`
	// Format is jsonl (default) or csv (a header row names the fields).
	Format string `yaml:"format"`
	// CSVColumns name a CSV file's columns in order, as Flink's CSV
	// format maps them by position: the file's first row is a header only
	// when it names each of them (in any order and case, among others; they
	// then map by its names), and data otherwise.
	CSVColumns []string `yaml:"csv_columns" json:",omitempty"`
	// Channels is the number of parallel source channels (default 1);
	// replay lines say which channel a line belongs to.
	Channels int `yaml:"channels"`
	// FinalWatermark, when false, ends the job at end of input without the
	// final MAX watermark, leaving open windows unfired (default true).
	FinalWatermark *bool `yaml:"final_watermark"`
	// Timestamp says where event time comes from.
	Timestamp Timestamp `yaml:"timestamp"`
	// NumbersInStrings reads the input of sum, min, max and avg given as
	// a JSON string that holds a number ("12.50") as that number, as
	// Flink's JSON format reads a DECIMAL column; without it such a
	// record is a dead letter (value_not_number).
	NumbersInStrings bool `yaml:"numbers_in_strings" json:",omitempty"`
	// Decimals declares fields that hold exact decimals of a precision
	// and scale, as a SQL table's DECIMAL(p, s) columns do: a record's
	// value (a JSON number, or a string that holds one as Java's
	// BigDecimal reads it) is read rounded
	// half away from zero to the scale (1.005 as DECIMAL(10, 2) is
	// 1.01), wherever the job reads the field; a value of more than
	// precision digits then is null (as Flink's JSON format reads it),
	// and one that is no number makes the record a dead letter
	// (value_not_number). A dotted field (ship.fee) is a field of a
	// nested object, read so in place (a record without the object
	// lacks it).
	Decimals []DecimalField `yaml:"decimals" json:",omitempty"`
	// Types declares the SQL types of fields, as a SQL table's columns
	// do, and reads a record's values as Flink's JSON format reads them
	// into those types, wherever the job reads the field (keys, filters,
	// aggregates, the time): "12" and 12.0 into a bigint are 12, "true"
	// into a boolean is true, 123 into a string is "123", "2.5" into a
	// double is 2.5. A value that the type cannot take (an integer
	// beyond it, text that is no number) makes the record a dead letter
	// (value_not_number, value_out_of_range). A dotted field is a field
	// of a nested object, as in Decimals.
	Types []TypedField `yaml:"types" json:",omitempty"`
	// Generator configures type generator.
	Generator *Generator `yaml:"generator"`
	// Nexmark configures type nexmark: the Nexmark benchmark's events as
	// rows of the Nexmark project's Flink table (connector/nexmarkio).
	Nexmark *NexmarkSource `yaml:"nexmark" json:",omitempty"`
	// Kafka configures type kafka.
	Kafka *KafkaSource `yaml:"kafka"`
	// NATS configures type nats.
	NATS *NATSSource `yaml:"nats"`
	// Extra are the settings of a registered kind's own that no field
	// above holds, as Sink.Extra are a sink's: a new source kind takes
	// settings without a field here (source: {type: mykind, url: ...},
	// or a block of its own, mykind.url). Compile refuses those the
	// source's kind does not take, as unknown fields.
	Extra   map[string]any    `yaml:"-" json:",omitempty"`
	ExtraAt map[string][2]int `yaml:"-" json:"-"`
}

// NexmarkSource is the Nexmark generator's settings.
type NexmarkSource struct {
	// Events is how many events to generate.
	Events int64 `yaml:"events"`
	// Rate is events per second of event time (default 10000).
	Rate int64 `yaml:"rate"`
	// Linger keeps the source open this long (processing time) after
	// its last event, so that the processing-time windows open at its
	// end fire before the job ends (Nexmark q12; semantics J2: a bounded
	// run fires none at its end). Left out of the JSON when unset.
	Linger *Duration `yaml:"linger" json:",omitempty"`
}

// NATSSource reads a NATS JetStream stream in stream order (an ordered
// consumer); the stream sequence is kept in the checkpoints, so a restore
// replays from it with nothing lost, twice or reordered. One channel reads
// a stream.
type NATSSource struct {
	// URL is the server (default nats://127.0.0.1:4222).
	URL string `yaml:"url"`
	// Stream is the JetStream stream; its message data are JSON records.
	Stream string `yaml:"stream"`
	// Subjects keeps only messages of these subjects (wildcards allowed).
	Subjects []string `yaml:"subjects"`
	// Start is earliest (default), a stream sequence number, or an RFC
	// 3339 time, for a run without a checkpoint.
	Start string `yaml:"start"`
	// StopAtEnd ends the job at the stream's last message at start.
	StopAtEnd bool `yaml:"stop_at_end"`
}

// KafkaSource reads a Kafka topic. Every partition has its own watermark
// generator (the watermark section) and idleness; a channel's watermark
// is the minimum over its partitions that are not idle. Partition p is
// read by channel p mod channels; positions live in the checkpoints.
type KafkaSource struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string `yaml:"brokers"`
	// Topic is the topic to read; its values are JSON records.
	Topic string `yaml:"topic"`
	// Group is the consumer group whose committed offsets start: committed
	// reads (weir itself keeps its positions in its checkpoints).
	Group string `yaml:"group"`
	// Start is earliest (default), latest, committed, or an RFC 3339 time
	// (the first record at or after it), for a run without a checkpoint.
	Start string `yaml:"start"`
	// StopAtEnd ends the job once every partition reached the end it had
	// at start (a bounded replay); by default the job runs until stopped.
	StopAtEnd bool `yaml:"stop_at_end"`
	// PartitionedByKey declares the topic partitioned by the job's key
	// with Kafka's default partitioner (murmur2): in group mode (weir run
	// --instance) each partition is a task, and the member checks the
	// first records of each.
	PartitionedByKey bool `yaml:"partitioned_by_key"`
	// TLS connects with TLS (the system's roots).
	TLS bool `yaml:"tls"`
	// SASL authenticates.
	SASL *SASL `yaml:"sasl"`
}

// SASL is Kafka authentication.
type SASL struct {
	// Mechanism is plain, scram-sha-256 or scram-sha-512.
	Mechanism string `yaml:"mechanism"`
	User      string `yaml:"user"`
	Password  string `yaml:"password"`
}

// Timestamp is the event-time field of records and its checks (R2).
type Timestamp struct {
	// Source is record (default: a field of the record), kafka (the
	// Kafka record timestamp; kafka sources) or nats (the JetStream
	// publish time; nats sources).
	Source string `yaml:"source"`
	// Field names the record field that holds event time (default ts).
	Field string `yaml:"field"`
	// Unit is ms (default), s, us, ns or rfc3339.
	Unit string `yaml:"unit"`
	// Checks refuses missing, negative, pre-2000, wrong-unit and future
	// timestamps as dead letters (default true).
	Checks *bool `yaml:"checks"`
	// MaxFuture is how far ahead of processing time a timestamp may be
	// (default 1h).
	MaxFuture *Duration `yaml:"max_future"`
	// WarnAhead, set by a front end (not in YAML), is how far ahead of
	// processing time an accepted timestamp is counted and warned of
	// (Plan.WarnAhead); nil: 5m.
	WarnAhead *Duration `yaml:"-" json:"-"`
}

// Generator is a synthetic source of orders: each record is
// {"order_id", "user_id", "amount", "ts"}.
type Generator struct {
	// Records is the number of records to generate; zero derives it from
	// Rate and Duration.
	Records int64 `yaml:"records"`
	// Rate is records per second of event time (default 1000); with pace:
	// wall, of processing time too.
	Rate float64 `yaml:"rate"`
	// Keys is the number of distinct user_id values (default 100).
	Keys int `yaml:"keys"`
	// Hot is the share of records whose user_id is the first key, u0 (a
	// hot key, for skew tests); the others spread evenly over the keys.
	// Default 0: every key alike. Left out of the spec hash when 0.
	Hot float64 `yaml:"hot" json:",omitempty"`
	// Duration is the event time the records span (default 1h).
	Duration *Duration `yaml:"duration"`
	// Start is the event time of the first record, RFC 3339 (default
	// 2026-01-01T00:00:00Z), or now: the processing clock's time when the
	// job starts reading, so that with pace: wall the timestamps follow
	// the clock (a restored run's continue from the clock, not from the
	// checkpoint; they differ from run to run).
	Start string `yaml:"start"`
	// Pace is none (the default: records come as fast as the job reads
	// them, a backlog whose timestamps rate spaces) or wall: rate records
	// per second of processing time, for a live load test. A job that
	// falls behind gets the records it missed as fast as it reads them,
	// until it is back on schedule. A --deterministic run, whose clock
	// stands still, reads unpaced.
	Pace string `yaml:"pace" json:",omitempty"`
	// Disorder lists delay bands: each record is delayed (its timestamp
	// moved back from the generator's clock) by a uniform amount within a
	// band chosen by share. Default: all records in order.
	Disorder []DelayBand `yaml:"disorder"`
	// Bad is the share of records that are malformed on purpose (bad JSON,
	// missing or wrong-unit timestamps), to exercise dead letters.
	Bad float64 `yaml:"bad"`
	// Seed makes the generator reproducible (default 1).
	Seed uint64 `yaml:"seed"`
}

// DelayBand is one band of a generator's disorder mix.
type DelayBand struct {
	// Share is the fraction of records in this band (shares sum to 1 or
	// less; the rest is in order).
	Share float64 `yaml:"share"`
	// Min and Max bound the delay.
	Min *Duration `yaml:"min"`
	Max *Duration `yaml:"max"`
}

// Watermark configures watermark generation (R3, R4).
type Watermark struct {
	// Type is bounded_out_of_orderness (default: the largest timestamp
	// minus the bound minus 1 ms, Flink's DataStream strategy),
	// monotonous (the bound 0), strictly_ascending (the largest timestamp
	// itself, Flink SQL's WATERMARK FOR t AS t; SQL's t - INTERVAL 'n'
	// is bounded_out_of_orderness with the bound n - 1 ms) or punctuated
	// (only the replay lines' $watermark values).
	Type string `yaml:"type"`
	// MaxOutOfOrderness is the bound of bounded_out_of_orderness.
	MaxOutOfOrderness *Duration `yaml:"max_out_of_orderness"`
	// IdleTimeout marks a channel idle after this long without records
	// (0: never). Default: 1m for kafka and nats sources, whose partitions
	// may stay empty, 0 for the others.
	IdleTimeout *Duration `yaml:"idle_timeout"`
	// Emit is periodic (default) or every_record.
	Emit string `yaml:"emit"`
	// Interval is the periodic emission interval (default 200ms).
	Interval *Duration `yaml:"interval"`
	// BacklogEvery: while a channel (a Kafka partition) reads a backlog,
	// its watermark is emitted after every this many of its records
	// instead of every interval (W10), so a replay is classified the same
	// at any speed. Default 1000; 0: periodic emission only.
	BacklogEvery *int `yaml:"backlog_every"`
	// Heartbeat, when positive, advances a silent channel's watermark with
	// processing time.
	Heartbeat *Duration `yaml:"heartbeat"`
	// MaxDrift (kafka sources) pauses partitions whose watermark runs more
	// than this ahead of the slowest active partition of their channel,
	// until it catches up (watermark alignment); pause time is counted.
	MaxDrift *Duration `yaml:"max_drift"`
}

// Window is the window assigner (R6).
type Window struct {
	// Type is tumbling, sliding, cumulate, session or global.
	Type string `yaml:"type"`
	// Size is the length of tumbling and sliding windows, and of a
	// cumulate window's period (its largest window).
	Size *Duration `yaml:"size"`
	// Slide is the distance between sliding windows' starts.
	Slide *Duration `yaml:"slide"`
	// Step is the distance between the ends of a cumulate window's
	// windows (semantics W15). Left out of the window's JSON when unset,
	// so that the spec hash and checkpoint meta of the other windows
	// stay as they were before cumulate windows.
	Step *Duration `yaml:"step" json:",omitempty"`
	// Gap is a session's inactivity gap.
	Gap *Duration `yaml:"gap"`
	// Offset shifts tumbling and sliding windows' alignment.
	Offset *Duration `yaml:"offset"`
}

// Trigger replaces the window's default trigger (R7).
type Trigger struct {
	// Type is event_time, processing_time, continuous, count, final or
	// purging.
	Type string `yaml:"type"`
	// Interval is continuous's early-firing interval.
	Interval *Duration `yaml:"interval"`
	// Count is count's element count.
	Count int64 `yaml:"count"`
	// Nested is the trigger that purging wraps.
	Nested *Trigger `yaml:"nested"`
}

// Aggregate is one per-window aggregate (R11).
type Aggregate struct {
	// Name is the output field.
	Name string `yaml:"name"`
	// Fn is count, sum, min, max, avg, first, last, collect or
	// count_distinct.
	Fn string `yaml:"fn"`
	// Field is the input field; count without a field counts records.
	Field string `yaml:"field"`
	// Type is how sum, avg, min and max read numbers: decimal (the
	// default: exact, 38 significant digits, as SQL's DECIMAL(38, s)) or
	// float (float64 arithmetic, as sums of fractions were before
	// decimals), or for avg integer (the average cut toward zero to an
	// integer, as SQL's AVG of an integer column is, in Flink: 7 / 3 is
	// 2), or for min and max string (the smallest or largest text, as
	// SQL's MIN and MAX of a string column compare them: by their UTF-8
	// bytes; a value that is no JSON string counts as its JSON text).
	// Empty means decimal; it is left out of the spec hash then, so
	// that older ledgers still match.
	Type string `yaml:"type" json:",omitempty"`
	// Nulls, for collect, is respect (a null or missing value is
	// collected as null, as SQL's ARRAY_AGG does by default) or ignore
	// (skipped, as by default); with either, a window that collected
	// nothing gives null, not [] (SQL's). Empty is left out of the spec
	// hash.
	Nulls string `yaml:"nulls" json:",omitempty"`
	// When names a field (the record's, or a computed one) that decides,
	// per record, whether the record counts into this aggregate, as SQL's
	// FILTER (WHERE ...) does: only a record whose field is true does; a
	// false, null or missing one is skipped by this aggregate alone (the
	// window still sees the record). Empty: every record counts; it is
	// left out of the spec hash.
	When string `yaml:"when" json:",omitempty"`
}

// Sinks says where each output goes.
type Sinks struct {
	// Results are where the results go: one sink (a mapping) or several
	// (a list of them), each receiving every result. The first is the
	// job's primary results sink, the one weir backfill revises and the
	// complete answer is compared with.
	Results     SinkList `yaml:"results"`
	Late        *Sink    `yaml:"late"`
	LatePartial *Sink    `yaml:"late_partial"`
	DeadLetter  *Sink    `yaml:"dead_letter"`
}

// Sink is one output.
type Sink struct {
	// Type is jsonl, stdout, kafka, postgres, nats, (results only)
	// sqlite, or (late only) ledger. Late and dead-letter sinks of type postgres or nats store
	// each record once by its entry id (its source position).
	Type string `yaml:"type"`
	// Path is the file (jsonl, sqlite).
	Path string `yaml:"path"`
	// Table is the SQLite or Postgres table (default results).
	Table string `yaml:"table"`
	// URL is the Postgres connection string (postgres), such as
	// postgres://user@127.0.0.1:5432/db (it may leave the password to
	// PGPASSWORD and ~/.pgpass), or the NATS server (nats).
	URL string `yaml:"url"`
	// Subject receives the results of a nats sink, published to a
	// JetStream stream with a message id per (key, window, pane), so that
	// a replay after a restore is dropped as duplicates within the
	// stream's duplicate window.
	Subject string `yaml:"subject"`
	// Dir and Retention configure a ledger (late records only): entries
	// are kept under Dir/<job name>/day=YYYY-MM-DD/, checksummed per line,
	// committed with the checkpoints; day directories older than
	// Retention (default: kept) are removed.
	Dir       string    `yaml:"dir"`
	Retention *Duration `yaml:"retention"`
	// Brokers, Topic, MarkerTopic, TLS and SASL configure a kafka sink:
	// results keyed by their key fields and window (a compacted topic
	// keeps the newest firing), the firing kind and pane in headers,
	// exactly once with checkpoints (a transaction per checkpoint, with a
	// marker in MarkerTopic, default <topic>-weir-checkpoints, which a run
	// with checkpoints creates if it is missing: one partition, compacted,
	// the results topic's replication factor). Topic, and the topics of
	// kafka late and dead-letter sinks, must exist: a run checks at start.
	Brokers     []string `yaml:"brokers"`
	Topic       string   `yaml:"topic"`
	MarkerTopic string   `yaml:"marker_topic"`
	TLS         bool     `yaml:"tls"`
	SASL        *SASL    `yaml:"sasl"`
	// Timeout, RetryFor, ConnectRetryFor and BatchRows configure a
	// postgres sink. Timeout is the deadline of every connect, statement
	// batch and commit (default 30s): a stalled connection is logged and
	// retried. While Postgres is unavailable the sink retries, and the
	// job waits (the sources stop reading), for RetryFor (default: until
	// stopped); until it has connected once (a wrong port), for
	// ConnectRetryFor (default 2m), then the job fails naming the address.
	// BatchRows is how many rows one transaction commits (default 1000):
	// a checkpoint's rows are committed in batches. The state does not
	// depend on them: a restore resumes across a change of them, as of
	// url (docs/format/checkpoint.md, "Changing a job").
	Timeout         *Duration `yaml:"timeout" json:"-"`
	RetryFor        *Duration `yaml:"retry_for" json:"-"`
	ConnectRetryFor *Duration `yaml:"connect_retry_for" json:"-"`
	BatchRows       int       `yaml:"batch_rows" json:"-"`
	// Columns, for a results sink that writes JSON (jsonl, stdout,
	// kafka, nats), are the columns of its rows, in order, as a SQL sink
	// table declares them; empty: weir's own row (key fields, window,
	// firing, run, pane, watermark, aggregates).
	Columns []Column `yaml:"columns" json:",omitempty"`
	// Layout, for a postgres results sink, is the table's layout: "" or
	// weir (weir's own: the job column, the key fields, window_start,
	// window_end, firing, run, pane, watermark and the aggregates, which
	// weir backfill revises), or declared (LayoutDeclared): the table has
	// the columns of Columns, of their Type, upserted by PrimaryKey, as
	// Flink's JDBC sink writes a table made for a Flink job.
	Layout string `yaml:"layout" json:",omitempty"`
	// PrimaryKey names the columns a declared table's rows are upserted
	// by: the columns of the key fields, window_start and window_end
	// (the default).
	PrimaryKey []string `yaml:"primary_key" json:",omitempty"`
	// Extra are the settings of a registered kind's own that no field
	// above holds (connector.Field names beside these), by name, as YAML
	// gave them; ExtraAt the line and column each was given at.
	// Compile refuses those the sink's kind does not take, as unknown
	// fields.
	Extra   map[string]any    `yaml:"-" json:",omitempty"`
	ExtraAt map[string][2]int `yaml:"-" json:"-"`
}

// DecimalField is a field of exact decimals (Source.Decimals).
type DecimalField struct {
	Field     string `yaml:"field"`
	Precision int    `yaml:"precision"`
	Scale     int    `yaml:"scale"`
}

// TypedField is a field of a SQL type (Source.Types): Type is bigint,
// int, smallint, tinyint, boolean, string, double or float.
type TypedField struct {
	Field string `yaml:"field"`
	Type  string `yaml:"type"`
}

// FieldTypes are the types a TypedField may have.
var FieldTypes = []string{"bigint", "int", "smallint", "tinyint", "boolean", "string", "double", "float"}

// ComputedField is a field computed from a record (Spec.Computed).
type ComputedField struct {
	Name string `yaml:"name"`
	// Expr is its expression, such as "bid.price * 0.908" or "CASE WHEN
	// kind = 0 THEN person.ts ELSE bid.ts END".
	Expr string `yaml:"expr"`
}

// Column is one column of a results row (Sink.Columns).
type Column struct {
	// Name is the column's name in the row.
	Name string `yaml:"name"`
	// From is what it holds: a key field, window_start, window_end,
	// window_time (window_end - 1), an aggregate's name, or the firing's
	// metadata: firing, run, pane or watermark (default: Name).
	From string `yaml:"from" json:",omitempty"`
	// Time is how window_start, window_end, window_time and watermark
	// (and a key field or an aggregate that holds epoch milliseconds) are
	// written: ms (default: epoch milliseconds), timestamp (as Flink's
	// JSON format writes a TIMESTAMP(3), 2026-01-01 00:05:00.000, in
	// UTC), timestamp_ltz (a TIMESTAMP_LTZ(3): the same with a Z) or
	// date (a DATE held as its midnight's milliseconds: 2026-01-01). An
	// infinite watermark, and the bounds of the global window, are null;
	// a field's value that is no integer is written as it is. It applies
	// to an Expr's value too.
	Time string `yaml:"time" json:",omitempty"`
	// Expr, instead of From, computes the column from the result: a SQL
	// expression over its key fields and aggregates by name (such as
	// "total / orders"; internal/expr says what it may hold), null in a
	// retraction.
	Expr string `yaml:"expr" json:",omitempty"`
	// Float is how a number in the column is written: "" as Go writes
	// it (7, 2.953724091e+07), "double" as Flink's JSON format writes a
	// SQL DOUBLE (Java's Double.toString: 7.0, 2.953724091E7), "float"
	// as it writes a FLOAT (Float.toString). A value that is no number
	// is written as it is.
	Float string `yaml:"float" json:",omitempty"`
	// Decimal, for a column of a number aggregate (count, sum, avg, min,
	// max, count_distinct) in JSON rows, writes its value as a
	// DECIMAL(precision, scale), as Flink casts a value into a DECIMAL
	// sink column: rounded half away from zero to the scale (a SUM of
	// 3.236 into a DECIMAL(10, 2) is 3.24, a COUNT of 2 into a
	// DECIMAL(5, 1) 2.0), null beyond the precision; a null, or a value
	// that is no number, as it is. The window, a having and backfill keep
	// the exact value; without it an aggregate is written in its own type
	// (a SUM at its input's scale). Tables keep the exact value in weir's
	// layout (a declared table's DECIMAL column rounds as the database
	// does).
	Decimal *ColumnDecimal `yaml:"decimal" json:",omitempty"`
	// Type, in a declared table (Sink.Layout), is the column's SQL type,
	// which a missing table is created with: Postgres's words or Flink
	// SQL's (DECIMAL(10, 2), TIMESTAMP(3), STRING); default one that
	// holds what the column holds.
	Type string `yaml:"type" json:",omitempty"`
}

// ColumnDecimal is the DECIMAL(Precision, Scale) that a results column
// writes its value as (Column.Decimal).
type ColumnDecimal struct {
	Precision int `yaml:"precision"`
	Scale     int `yaml:"scale"`
}

// LayoutDeclared is the Sink.Layout of a table of its own columns.
const LayoutDeclared = "declared"

// Duration is a length of time in milliseconds. In a spec it is a string
// such as "250ms", "10m" or "1h30m" (units ms, s, m, h, d), or an integer
// number of milliseconds; values beyond the int64 range saturate.
type Duration int64
