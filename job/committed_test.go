package job

import (
	"fmt"
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
	if _, ok, err := LastCommitted(p, dir); ok || err != nil {
		t.Fatalf("without checkpoints: ok %v, %v", ok, err)
	}

	ck := plain + "checkpoint: {dir: ck}\n"
	p, err = spec.Parse([]byte(ck))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok, err := LastCommitted(p, t.TempDir()); !ok || err != nil || c.Checkpoint != 0 || c.Finished {
		t.Fatalf("before any run: %+v, %v, %v", c, ok, err)
	}
	dir, _ = runSpec(t, ck, nil, RunOptions{Deterministic: true, CheckpointClock: jobtest.EveryRead()})
	c, ok, err := LastCommitted(p, dir)
	if !ok || err != nil || c.Checkpoint == 0 || !c.Finished || c.Run == 0 || c.Watermark == etime.MinTime {
		t.Fatalf("after a finished run: %+v, %v, %v", c, ok, err)
	}
}
