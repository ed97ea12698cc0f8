package connector

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// SinkRole is an output of a job a sink kind can take, as a set.
type SinkRole uint8

const (
	// RoleResults: the windows' firings.
	RoleResults SinkRole = 1 << iota
	// RoleLate: the records too late for their windows (the side output).
	RoleLate
	// RoleDeadLetters: the records that could not be read.
	RoleDeadLetters
	// AllRoles is every output.
	AllRoles = RoleResults | RoleLate | RoleDeadLetters
)

// Ability is what a sink kind promises across a crash, as a set (the
// interfaces of sink.go, named for a job spec's reader).
type Ability uint8

const (
	// AbilityTransactional: output becomes visible with the checkpoint
	// that covers it ([Transactional]).
	AbilityTransactional Ability = 1 << iota
	// AbilityIdempotent: each record id is stored once however often it
	// is written ([Idempotent]).
	AbilityIdempotent
	// AbilityUpsert: a window's newest revision, by (run, pane), replaces
	// the older ones (a keyed table or a compacted topic).
	AbilityUpsert
	// AbilityPositions: a source kind whose readers keep their positions
	// in checkpoints ([CheckpointedReader]), so a restore replays from
	// them.
	AbilityPositions
)

var abilityNames = []struct {
	a    Ability
	name string
}{{AbilityTransactional, "transactional"}, {AbilityIdempotent, "idempotent"}, {AbilityUpsert, "upsert"}, {AbilityPositions, "positions"}}

// String lists the abilities, comma-separated ("-" for none).
func (a Ability) String() string {
	var s []string
	for _, n := range abilityNames {
		if a&n.a != 0 {
			s = append(s, n.name)
		}
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// String lists the roles, comma-separated.
func (o SinkRole) String() string {
	var s []string
	for _, n := range []struct {
		o    SinkRole
		name string
	}{{RoleResults, "results"}, {RoleLate, "late"}, {RoleDeadLetters, "dead_letter"}} {
		if o&n.o != 0 {
			s = append(s, n.name)
		}
	}
	return strings.Join(s, ", ")
}

// Field is one setting of a kind in a job spec, by its YAML name
// relative to where the kind's settings sit (a sink's mapping, or the
// source's); a dotted name is a field of a nested block (kafka.topic).
type Field struct {
	Name string
	// Doc says what the field does, in a sentence.
	Doc string
	// Required fields must be given.
	Required bool
}

// ColumnsField is the setting of the sinks whose results are JSON rows
// (jsonl, stdout, kafka, nats): the rows' columns, as a SQL job's sink
// table declares them (the job spec's Sink.Columns).
var ColumnsField = Field{Name: "columns", Doc: "results only: the columns of the JSON rows, in order, each {name, from, time} or {name, expr}: from a key field, window_start, window_end, window_time, an aggregate, or firing, run, pane, watermark, times as ms, timestamp or timestamp_ltz; or expr, a SQL expression over the key fields and aggregates (default: weir's own row)"}

// SourceKind describes a kind as a source.
type SourceKind struct {
	// Fields are the kind's own settings beside source.type (the fields
	// every source has, such as timestamp, are the job spec's).
	Fields []Field
	// Abilities are the kind's as a source (AbilityPositions).
	Abilities Ability
	// IdleTimeout is the default idle timeout of the kind's channels (0:
	// never idle): a broker's partitions may stay empty for good, and
	// without idleness one of them would hold the watermark back forever.
	IdleTimeout time.Duration
	// Check (nil: none) checks the values of the kind's settings as a
	// source, by their Field names; the job spec checks what spans the
	// job (time modes, formats, the end of input).
	Check func(c Checker)
	// Open opens the kind as a job spec's source: the runner reads its
	// Lines, decodes them and drives their watermarks. With it, a new
	// source kind is its package and one register call.
	Open SourceOpener
	// OwnEnd: the kind's readers end as SourceOpen.Stop says and send the
	// final watermark as SourceOpen.Final says (a file, a generator);
	// otherwise the engine ends them at a stop and sends the final
	// watermark after the end of a bounded input (OpenedSource.Bounded).
	OwnEnd bool
	// Replay (nil: the kind's input cannot be read again) says whether a
	// source of the kind with settings s reads the same records again
	// from its start (nil), as the complete answer of weir backfill
	// --verify needs, or why not, with what to do; path resolves a path
	// setting.
	Replay func(s Settings, path func(string) string) error
	// Splits: each channel reads several inputs (Kafka partitions) and
	// watermarks each in its reader (SourceOpen.Splits), and a record's
	// position is its split's (its entry id is split:position).
	Splits bool
	// Columns, when set, are the columns of the typed records the kind's
	// readers emit (Line.Typed) instead of text: a job reads the columns
	// it needs from them, rather than parse each record's JSON text.
	Columns []TypedColumn
}

// SinkKind describes a kind as a sink.
type SinkKind struct {
	// Roles are the outputs the kind can take.
	Roles SinkRole
	// Fields are the kind's settings beside type.
	Fields []Field
	// Abilities are the kind's as a sink of results; RecordAbilities as a
	// sink of late records and dead letters (a kind may keep the two
	// differently, as a table upserts results by window but stores
	// records once by id).
	Abilities, RecordAbilities Ability
	// Reasons: the kind keeps each late record with its reason, so a late
	// sink of it takes the partial misses (window_expired_partial) too
	// unless late_partial names a sink of their own.
	Reasons bool
	// Check (nil: none) checks the values of the kind's settings as the
	// sink of output (results, late, late_partial or dead_letter), by
	// their Field names; the job spec checks what spans sinks (two sinks
	// of one file or table).
	Check func(c Checker, output string)
	// OpenResults (nil: the runner has the kind built in) opens the kind
	// as a job spec's sink of results. With it, a new results sink kind
	// is its package and one register call: the runner opens it, writes
	// each result as a Row and drives it through checkpoints and fresh
	// starts (see ResultsSink).
	OpenResults func(ctx context.Context, o ResultsOpen) (ResultsSink, error)
	// OpenMessages (nil: the runner has the kind built in) opens the kind
	// as a job spec's sink of messages in role o.Role: results (unless
	// OpenResults opens them), late records or dead letters. The runner
	// writes each output as a Message and drives the sink by its
	// abilities: a Transactional one is pre-committed at each checkpoint
	// (the state it returns kept in the checkpoint), committed once the
	// checkpoint is durable, recovered on a restore and aborted when the
	// run fails, and the output at the end of a run that ended well is
	// pre-committed and committed as epoch 0; any other one is flushed at
	// each checkpoint and at that end.
	OpenMessages func(ctx context.Context, o MessagesOpen) (Sink[Message], error)
	// OpenLedger (nil: its late records cannot be read back) opens a late
	// sink of the kind as the job's late-data ledger, which weir backfill
	// folds into the results and weir ledger lists. With it, a new kind
	// of ledger is its package and one register call.
	OpenLedger func(ctx context.Context, o LedgerOpen) (LedgerReader, error)
	// Revise says how weir backfill revises the kind's results and the
	// complete answer reads them back; OpenStore (set unless Revise is
	// NoRevision) opens them for that. With them, a new results kind that
	// backfill revises is its package and one register call.
	Revise    Revision
	OpenStore func(ctx context.Context, o StoreOpen) (ResultsStore, error)
	// Prepare (nil: none) readies the kind's server for a sink of the job
	// before the run (the user's topic checked, weir's own topic created),
	// so that a problem stops the job at start, with the fix, rather than
	// at its first checkpoint. It is called once per sink of the kind,
	// before a checkpoint is chosen or any sink is opened.
	Prepare func(ctx context.Context, o PrepareOpen) error
	// Committed (nil: the kind's sinks finish after a crash what they
	// pre-committed) is, for a results kind whose Transactional sink
	// cannot (a CommitReporter: a Kafka transaction), the newest epoch
	// whose commit took effect for the job's sink with settings s (ok
	// false: none yet), asked before the sink is opened: the job then
	// restores no checkpoint newer than it.
	Committed func(ctx context.Context, s Settings, job string) (epoch int64, ok bool, err error)
}

// PrepareOpen is what a job spec's runner gives SinkKind.Prepare.
type PrepareOpen struct {
	// Settings are the sink's, at Output in messages.
	Settings Settings
	Output   string
	Role     SinkRole
	Job      string
	// Results are the settings of the job's first results sink of the
	// same kind (nil: it has none), for a kind whose late records and
	// dead letters go through its results sink (Kafka's transactions).
	Results Settings
	// Checkpoints: the job takes checkpoints (a transactional sink then
	// commits one epoch per checkpoint).
	Checkpoints bool
	// CheckOnly: another sink of the run already has a problem, so the
	// run is refused: Prepare checks and reports, and creates nothing
	// (so that the refusal names every problem at once and changes
	// nothing).
	CheckOnly bool
	// Info, when set, is told what Prepare did that a person should know
	// (a topic created).
	Info func(msg string)
}

// Checker is a kind's Check's view of a job spec: it reads the kind's
// settings by their Field names (a dotted name reads a nested block:
// sasl.user) and reports problems, which the spec prints at the setting's
// field path with the fix. An unset setting reads as its zero value.
type Checker interface {
	Settings
	// Default gives an unset string setting a value.
	Default(field, value string)
	// Report reports a problem with field ("" is the kind's settings as a
	// whole); fix says what to do.
	Report(field, msg, fix string)
	// Positive reports a duration setting that is given but not positive;
	// what names it in the fix ("the timeout").
	Positive(field, what string)
	// OneOf reports a string setting that is missing or not one of
	// allowed.
	OneOf(field string, allowed ...string)
}

// Kind is a connector kind: the name a job spec's type: gives, what it
// does, and its settings as a source, a sink or both.
type Kind struct {
	// Name is the kind's type: value, such as kafka (lower case letters,
	// digits and _).
	Name string
	// Doc says what the kind reads or writes, in a sentence.
	Doc string
	// Source is nil for a kind that is not a source, Sink for one that
	// is not a sink.
	Source *SourceKind
	Sink   *SinkKind
}

// Fields returns the kind's settings as a source (source true) or as a
// sink (nil: it is not one).
func (k Kind) Fields(source bool) []Field {
	switch {
	case source && k.Source != nil:
		return k.Source.Fields
	case !source && k.Sink != nil:
		return k.Sink.Fields
	}
	return nil
}

// Takes reports whether the kind has the named setting as a source
// (source true) or as a sink.
func (k Kind) Takes(source bool, name string) bool {
	return slices.ContainsFunc(k.Fields(source), func(f Field) bool { return f.Name == name })
}

// Registry holds the connector kinds a job spec may name. Its methods
// are safe for concurrent use; kinds are listed in the order they were
// registered, which is the order the job spec's messages list them in.
type Registry struct {
	mu    sync.RWMutex
	kinds []Kind
}

// NewRegistry returns an empty registry (a test's own, say).
func NewRegistry() *Registry { return &Registry{} }

// Default is the registry the job spec resolves type: through. It is
// empty until a package registers into it: the built-in kinds are
// registered by importing github.com/weirstream/weir/connector/all, as
// database/sql's drivers are by their packages (the weir command and
// package job import it). It is the one registry a process has, written
// only by package initialization.
var Default = NewRegistry()

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ErrDuplicateKind is returned when a kind's name is registered twice.
var ErrDuplicateKind = errors.New("connector: kind registered twice")

// Register adds a kind. It refuses a bad name, a kind that is neither a
// source nor a sink, a sink of no output, a field without a name or doc,
// a Revise without OpenStore (or the reverse), and a name registered
// before (ErrDuplicateKind).
func (r *Registry) Register(k Kind) error {
	switch {
	case !kindName.MatchString(k.Name):
		return fmt.Errorf("connector: kind name %q: use lower case letters, digits and _", k.Name)
	case k.Source == nil && k.Sink == nil:
		return fmt.Errorf("connector: kind %s is neither a source nor a sink", k.Name)
	case k.Sink != nil && k.Sink.Roles&AllRoles == 0:
		return fmt.Errorf("connector: sink kind %s takes no output", k.Name)
	case k.Doc == "":
		return fmt.Errorf("connector: kind %s has no doc", k.Name)
	case k.Sink != nil && (k.Sink.Revise != NoRevision) != (k.Sink.OpenStore != nil):
		return fmt.Errorf("connector: sink kind %s: Revise and OpenStore go together", k.Name)
	}
	for _, fs := range [][]Field{k.Fields(true), k.Fields(false)} {
		seen := map[string]bool{}
		for _, f := range fs {
			if f.Name == "" || f.Doc == "" || seen[f.Name] {
				return fmt.Errorf("connector: kind %s: field %q has no name, no doc, or comes twice", k.Name, f.Name)
			}
			seen[f.Name] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.ContainsFunc(r.kinds, func(o Kind) bool { return o.Name == k.Name }) {
		return fmt.Errorf("%w: %s", ErrDuplicateKind, k.Name)
	}
	r.kinds = append(r.kinds, k)
	return nil
}

// MustRegister is Register for package initialization: it panics on an
// error, which is a programming error of the registering package.
func (r *Registry) MustRegister(kinds ...Kind) {
	for _, k := range kinds {
		if err := r.Register(k); err != nil {
			panic(err)
		}
	}
}

// Lookup returns the named kind.
func (r *Registry) Lookup(name string) (Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Revise is how weir backfill revises the results of kind name's sink
// (SinkKind.Revise); NoRevision for a kind that is not registered or has
// no sink.
func (r *Registry) Revise(name string) Revision {
	if k, ok := r.Lookup(name); ok && k.Sink != nil {
		return k.Sink.Revise
	}
	return NoRevision
}

// Kinds returns every kind in registration order.
func (r *Registry) Kinds() []Kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.kinds)
}

// Sources returns the names of the source kinds, in registration order.
func (r *Registry) Sources() []string {
	return r.names(func(k Kind) bool { return k.Source != nil })
}

// Sinks returns the names of the sink kinds that take output o, in
// registration order.
func (r *Registry) Sinks(o SinkRole) []string {
	return r.names(func(k Kind) bool { return k.Sink != nil && k.Sink.Roles&o == o })
}

func (r *Registry) names(keep func(Kind) bool) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []string
	for _, k := range r.kinds {
		if keep(k) {
			names = append(names, k.Name)
		}
	}
	return names
}
