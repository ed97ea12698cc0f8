package weir

import (
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/winop"
)

// The errors of a job that callers may want to tell apart, matched with
// errors.Is (the engine returns these values, often wrapped).
var (
	// ErrAlreadyRun: Execute or Step was called on an Env that has run.
	ErrAlreadyRun = runtime.ErrAlreadyRun
	// ErrNotStarted: the job failed before it ran (a source that did not
	// open, an operator that could not be built or restored); it read
	// nothing, and the Report of a resumed job is not its checkpoint's
	// counts.
	ErrNotStarted = runtime.ErrNotStarted
	// ErrGlobalLateness: a global window was given allowed lateness,
	// which cannot apply to a window without an end (rule W6).
	ErrGlobalLateness = winop.ErrGlobalLateness
	// ErrNonMergeableTrigger: session windows were given a trigger that
	// cannot merge windows.
	ErrNonMergeableTrigger = winop.ErrNonMergeableTrigger
)
