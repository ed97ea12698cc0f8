package checkpoint

import (
	"strconv"
	"strings"
)

// Store starts checkpoints: a job with checkpoints (weir.CheckpointOptions)
// is given one and calls Begin once per checkpoint. Dir is the on-disk
// Store; a test or another medium may implement it too.
//
// The job calls Begin from one goroutine at a time and has at most one
// checkpoint pending: the next Begin comes after the previous checkpoint's
// Commit or Abort returned. Ids are positive and strictly increase within
// a run; a restored job continues above the checkpoint it restored
// (weir.CheckpointOptions.NextID). An error from Begin fails that
// checkpoint only: the job goes on and tries again at the next interval.
type Store interface {
	Begin(id int64) (Pending, error)
}

// Pending collects the parts of one checkpoint, then commits or aborts it.
//
//   - WritePart is called concurrently, from the job's goroutines that write
//     its subtasks' parts (several at once), each part once, named as
//     PartName names them. It must not keep data after it returns: the
//     caller reuses the buffer for the same part of the next checkpoint.
//     Once it returns nil the part belongs to the checkpoint; an error
//     aborts the checkpoint.
//   - Commit is called once, after every WritePart of the checkpoint
//     returned nil, on the goroutine that wrote the last parts (the
//     pre-commit hooks, weir.Env.OnPreCommit, write theirs there first).
//     Only once it returns nil is the checkpoint complete: a restore may
//     start from it, and the job tells its listeners it committed. An
//     error leaves the checkpoint incomplete, and the job aborts it.
//   - Abort drops the checkpoint: when a part or the commit failed, or
//     when the job cannot complete it (a subtask finished its input). It
//     may come while WriteParts are in flight, and must then wait for
//     them or make them fail. It is called at most once, and never after
//     a Commit that returned nil.
type Pending interface {
	WritePart(name string, data []byte) error
	Commit() error
	Abort() error
}

// View reads the parts of a complete checkpoint, for a job that restores
// from it (weir.CheckpointOptions.Restore) or a tool that reads it. The
// job calls Parts while it builds its subtasks, from the goroutine that
// runs it, and later from any goroutine that calls weir.Env.Restored: an
// implementation must be safe for concurrent reads. The job does not
// modify the returned bytes.
type View interface {
	// Parts returns the part called name of every subtask of stage that
	// wrote one (the part stored as PartName(stage, index, name)), by the
	// subtask's index in the run that wrote it; an empty or nil map when
	// there is none.
	Parts(stage, name string) map[int][]byte
}

// PartName is the name under which the job writes the part called name of
// subtask index of stage: "stage/index/name".
func PartName(stage string, index int, name string) string {
	return stage + "/" + strconv.Itoa(index) + "/" + name
}

// PartIndex is the subtask index of the part called part if PartName
// made it from stage and name, false for a part of another stage or name.
func PartIndex(part, stage, name string) (int, bool) {
	rest, ok := strings.CutPrefix(part, stage+"/")
	if !ok {
		return 0, false
	}
	idx, n, ok := strings.Cut(rest, "/")
	if !ok || n != name {
		return 0, false
	}
	i, err := strconv.Atoi(idx)
	return i, err == nil
}

// PartsView is a View of parts held in memory, by part name.
type PartsView map[string][]byte

// Parts implements View.
func (v PartsView) Parts(stage, name string) map[int][]byte {
	out := map[int][]byte{}
	for k, b := range v {
		if i, ok := PartIndex(k, stage, name); ok {
			out[i] = b
		}
	}
	return out
}
