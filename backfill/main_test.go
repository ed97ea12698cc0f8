package backfill

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/job"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runSpec writes files into a fresh directory, runs the YAML spec there
// (deterministically, at jobtest.TestNow, unless o says otherwise) and
// returns the directory and the summary, whose counts must be conserved.
func runSpec(t *testing.T, yaml string, files map[string]string, o job.RunOptions) (string, job.Summary) {
	t.Helper()
	dir, p := jobtest.Prepare(t, yaml, files, o.Dir)
	o.Dir = dir
	if o.Now.IsZero() {
		o.Now = jobtest.TestNow
	}
	j, err := job.Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Conserved() {
		t.Fatalf("conservation violated: %s", sum.JSON())
	}
	return dir, sum
}
