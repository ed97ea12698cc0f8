package job

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/spec"
)

// A fresh start records what its outputs' rows and ledger entries mean
// (the spec hash a backfill checks, outfmt.SpecHash, and the
// state-relevant fields it is made of) in a file beside the spec, so that
// a later run with --append (RunOptions.Append), which keeps the earlier
// runs' outputs, is refused when it would add rows of another meaning to
// them: windows of two sizes in one table, sums of two formulas, and
// ledger entries that a backfill under either spec would refuse.

// definitionFile is the file, in the spec's directory dir, that holds the
// definition of job's newest fresh run into each set of outputs: a JSON
// object of definitions by outputsKey (two specs of one job name may
// write to different outputs).
func definitionFile(dir, job string) string {
	return filepath.Join(dir, "."+url.PathEscape(job)+".definition.json")
}

// outputsKey names the job's results outputs (two specs of one job name
// in one directory may write to different ones): each results sink's
// file, its symbolic links resolved (two spellings of one path are one),
// or for a sink of a server its type and settings.
func (j *Job) outputsKey() string {
	o := RunOptions{Dir: j.runDir}
	f := planFields(j.plan)
	var parts []string
	ops := []*spec.SinkOp(nil)
	if path, err := j.plan.Graph.Path(); err == nil {
		ops = path.Sinks()
	}
	for _, op := range ops {
		k := op.Config
		switch {
		case k == nil || op.Role != connector.RoleResults:
		case k.Path != "":
			parts = append(parts, "file "+lockTarget{path: o.Path(k.Path)}.lock())
		default:
			var fields []string
			for _, m := range []map[string]string{f.state, f.other} {
				for path, v := range m {
					if rest, ok := strings.CutPrefix(path, "sinks."+op.Name); ok {
						fields = append(fields, rest+"="+v)
					}
				}
			}
			slices.Sort(fields)
			parts = append(parts, k.Type+" "+strings.Join(fields, " "))
		}
	}
	slices.Sort(parts)
	return fieldDigest("results", []byte(strings.Join(parts, "\n")))
}

// readDefinitions is the definitions dir holds for job (none when the
// file is missing or unreadable: the outputs are what they are).
func readDefinitions(dir, job string) map[string]definition {
	m := map[string]definition{}
	if b, err := os.ReadFile(definitionFile(dir, job)); err == nil {
		if json.Unmarshal(b, &m) != nil {
			return map[string]definition{}
		}
	}
	return m
}

// definition is what definitionFile holds.
type definition struct {
	// Spec is the hash of every window's plan (outfmt.SpecHash).
	Spec string `json:"spec"`
	// Fields are the spec's fields that Spec is made of (hashed), by
	// path: a state-relevant one's JSON, another's digest; they name what
	// changed.
	Fields map[string]string `json:"fields"`
	// Run is the id of that run (outCounters.Run).
	Run int64 `json:"run,omitempty"`
	// Before is the end of the latest window the runs before it into the
	// same outputs wrote (epoch milliseconds; 0: none, or not known), and
	// Through that of this run and those before it, once it finished:
	// the time the outputs cover, which a later --append run's windows
	// should not overlap (Job.earlier).
	Before  int64 `json:"before,omitempty"`
	Through int64 `json:"through,omitempty"`
}

// hashed reports whether the spec's field at path is one of what
// outfmt.SpecHash counts: the key, the window, the aggregates, how the
// event time is read, the computed fields, the where, the decimal fields
// and the time zone.
func hashed(path string) bool {
	for _, p := range []string{"key", "window", "aggregate", "time", "time_zone", "where", "computed", "source.timestamp", "source.decimals"} {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// currentDefinition is the job's definition.
func (j *Job) currentDefinition() definition {
	var hashes []string
	for _, b := range j.branches {
		hashes = append(hashes, outfmt.SpecHash(b.plan))
	}
	d := definition{Spec: strings.Join(hashes, ","), Fields: map[string]string{}}
	f := planFields(j.plan)
	for _, m := range []map[string]string{f.state, f.other} {
		for path, v := range m {
			if hashed(path) {
				d.Fields[path] = v
			}
		}
	}
	return d
}

// checkAppend refuses a fresh start with --append (o.Append) whose
// definition differs from that of the job's newest fresh run in dir, if
// one recorded it. It runs before the sinks open.
func (j *Job) checkAppend(o RunOptions) error {
	if !o.Append || o.Dir == "" || o.Task != nil {
		return nil
	}
	then, ok := readDefinitions(o.Dir, j.plan.Name)[j.outputsKey()]
	if !ok {
		return nil // no earlier run into these outputs recorded one
	}
	now := j.currentDefinition()
	if then.Spec == now.Spec {
		return nil
	}
	var diffs []string
	for path := range keysOf(then.Fields, now.Fields) {
		if then.Fields[path] != now.Fields[path] {
			diffs = append(diffs, path)
		}
	}
	slices.Sort(diffs)
	what := "its key, window, aggregates or how they read records changed"
	if len(diffs) > 0 {
		what = "changed: " + strings.Join(diffs, ", ")
	}
	return fmt.Errorf("--append: the outputs of job %q hold earlier runs of another definition (%s): appended rows would mean something else than the rows beside them, and weir backfill would refuse one side's ledger entries; run without --append (the outputs start over), or give the changed job another name and its own outputs (the earlier definition is recorded in %s)",
		j.plan.Name, what, definitionFile(o.Dir, j.plan.Name))
}

// aboveEarlierRun raises the id of a fresh start above that of the job's
// newest fresh run into the same outputs (as recorded in dir) when an
// output is a Kafka topic or a NATS subject, which keep earlier runs'
// messages: readers fold results by (run, pane), and NATS would drop a
// message whose id (of run, key, window and pane) it saw, so two runs
// of one id (--deterministic with one --now) would be one run to them.
// Outputs that start over (files, tables) keep a repeated id, so that a
// deterministic rerun writes the same bytes.
func (j *Job) aboveEarlierRun(o RunOptions) {
	if o.Dir == "" || o.Task != nil {
		return
	}
	path, err := j.plan.Graph.Path()
	if err != nil || !slices.ContainsFunc(path.Sinks(), func(op *spec.SinkOp) bool {
		return op.Config != nil && (op.Config.Type == "kafka" || op.Config.Type == "nats")
	}) {
		return
	}
	if then, ok := readDefinitions(o.Dir, j.plan.Name)[j.outputsKey()]; ok {
		j.noteRun(then.Run)
	}
}

// noteDefinition records the job's definition for a later --append, at a
// fresh start that opened its outputs.
func (j *Job) noteDefinition(o RunOptions) {
	if o.Dir == "" || o.Task != nil {
		return
	}
	m := readDefinitions(o.Dir, j.plan.Name)
	d := j.currentDefinition()
	d.Run = j.out.c.Run
	if then, ok := m[j.outputsKey()]; ok && o.Append {
		d.Before = max(then.Through, then.Before)
	}
	m[j.outputsKey()] = d
	j.writeDefinitions(o.Dir, m)
}

// writeDefinitions writes definitions m of the job in dir. A failure is
// told, not fatal: the run's outputs are right without it.
func (j *Job) writeDefinitions(dir string, m map[string]definition) {
	b, _ := json.Marshal(m) // plain data
	if err := os.WriteFile(definitionFile(dir, j.plan.Name), append(b, '\n'), 0o644); err != nil {
		j.warnOutput(fmt.Sprintf("could not record the job's definition for a later --append: %v", err))
	}
}

// earlierRuns reads, for a run into outputs that earlier runs wrote and
// kept (--append, or a resume of such a run), the end of the latest
// window those runs wrote (definition.Before; 0 when none is recorded).
func (j *Job) earlierRuns() etime.Time {
	if j.runDir == "" || j.task {
		return 0
	}
	return etime.Time(readDefinitions(j.runDir, j.plan.Name)[j.outputsKey()].Before)
}

// noteThrough records, once the run finished, the end of the latest
// window the job's outputs now hold results of (definition.Through).
func (j *Job) noteThrough(through etime.Time) {
	if j.runDir == "" || j.task {
		return
	}
	m := readDefinitions(j.runDir, j.plan.Name)
	d, ok := m[j.outputsKey()]
	if !ok || d.Run != j.run {
		return // another run's record (or none): leave it
	}
	d.Through = max(d.Before, int64(through))
	m[j.outputsKey()] = d
	j.writeDefinitions(j.runDir, m)
}

// keysOf is the set of the keys of a and b.
func keysOf(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}
