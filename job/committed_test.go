package job

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// TestLastCommitted: a plan without checkpoints has nothing to report; a
// finished run's newest checkpoint says so, with its watermark and the
// run; before any checkpoint, nothing is committed.
func TestLastCommitted(t *testing.T) {
	plain := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	dir, _ := runSpec(t, plain, nil, RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LastCommitted(p, RunOptions{Dir: dir}); ok || err != nil {
		t.Fatalf("without checkpoints: ok %v, %v", ok, err)
	}

	ck := plain + "checkpoint: {dir: ck}\n"
	p, err = spec.Parse([]byte(ck))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok, err := LastCommitted(p, RunOptions{Dir: t.TempDir()}); !ok || err != nil || c.Checkpoint != 0 || c.Finished {
		t.Fatalf("before any run: %+v, %v, %v", c, ok, err)
	}
	dir, _ = runSpec(t, ck, nil, RunOptions{Deterministic: true, CheckpointClock: jobtest.EveryRead()})
	c, ok, err := LastCommitted(p, RunOptions{Dir: dir})
	if !ok || err != nil || c.Checkpoint == 0 || !c.Finished || c.Run == 0 || c.Watermark == etime.MinTime {
		t.Fatalf("after a finished run: %+v, %v, %v", c, ok, err)
	}

	// A run given its checkpoint directory (--checkpoint-dir) keeps them
	// there, and LastCommitted finds them there too.
	p, err = spec.Parse([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Deterministic: true, CheckpointClock: jobtest.EveryRead()}
	dir, _ = runSpec(t, plain, nil, o)
	o.Dir, o.CheckpointDir = dir, dir+"/elsewhere"
	if _, ok, err := LastCommitted(p, o); !ok || err != nil {
		t.Fatalf("with a checkpoint directory given, before any run: ok %v, %v", ok, err)
	}
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := LastCommitted(p, o); !ok || err != nil || c.Checkpoint == 0 || !c.Finished {
		t.Fatalf("with a checkpoint directory given, after a finished run: %+v, %v, %v", c, ok, err)
	}

	// Another job's checkpoint directory is refused, naming both jobs
	// (a backfill would cut this job's ledger at the other's position).
	other, err := spec.Parse([]byte(strings.Replace(plain, "name: orders", "name: payments", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := LastCommitted(other, o); err == nil || !strings.Contains(err.Error(), `holds checkpoints of job "orders", not of "payments"`) {
		t.Fatalf("another job's checkpoint directory: %v", err)
	}

	// A spec whose window (state-relevant) differs from the one that wrote
	// the checkpoints is refused, naming the field: its results and ledger
	// entries are of 1-minute windows. A changed lateness and a changed
	// ledger path (the ledger's place) are refused too; a late-firing
	// throttle (not state-relevant) and a removed dead-letter sink are not.
	for _, c := range []struct{ from, to, want string }{
		{"size: 1m", "size: 2m", "whose window differs from this spec's (window.size)"},
		{"allowed_lateness: 3m", "allowed_lateness: 5m", "(allowed_lateness)"},
		{"path: late.jsonl", "path: late2.jsonl", "whose sinks differ from this spec's (sinks.late.path)"},
		{"trigger: {type: continuous, interval: 20s}", "trigger: {type: continuous, interval: 20s}\nlate_firing_interval: 10s", ""},
		{"  dead_letter: {type: jsonl, path: bad.jsonl}\n", "", ""},
	} {
		changed, err := spec.Parse([]byte(strings.Replace(plain, c.from, c.to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = LastCommitted(changed, o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s -> %s: %v", c.from, c.to, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "so give the spec that wrote them")):
			t.Errorf("%s -> %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
}
