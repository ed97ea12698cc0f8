package job

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/internal/jobtest"
)

// TestArchiveWithoutCheckpoints: a job without checkpoints commits its
// archive every 1,000 windows as it runs, each window's newest revision
// only, not every revision at the end of the run.
func TestArchiveWithoutCheckpoints(t *testing.T) {
	job := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: sliding, size: 2m, slide: 1m}"), "{type: sqlite, path: results.db}", "{type: jsonl, path: results.jsonl}", 1) +
		"archive: {dir: archive, horizon: 30d}\n"
	job = strings.Replace(job, "keys: 20", "keys: 100", 1) // 6,000 windows
	dir := t.TempDir()
	var marks []etime.Time
	runSpec(t, job, nil, RunOptions{Dir: dir, Deterministic: true, Stop: func() bool {
		a, err := archive.Open(filepath.Join(dir, "archive"))
		if err != nil {
			t.Fatal(err)
		}
		live, err := a.Live()
		if err := errors.Join(err, a.Close()); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, live)
		return false
	}})
	if mid := marks[len(marks)*5/6]; mid == etime.MinTime {
		t.Fatalf("with 5/6 of the input read, the archive had no commit (live marks %v)", marks[len(marks)-3:])
	}
}
