package backfill

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// TestBackfillRetriesReset: the connection of a Postgres backfill is
// dropped once, as its second batch begins; the batch is rolled back and
// revised again on a new connection, the retry is told, and the backfill
// ends with the same table and report as one that was never interrupted.
// (Before, it exited at the first reset.)
func TestBackfillRetriesReset(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	p, purl := jobtest.StartPGProxy(t, url)
	run := func(through string) (string, BackfillReport, []string) {
		table := jobtest.PgTable(t, conn, "weir_bf_reset")
		yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "{type: sqlite, path: results.db}",
			"{type: postgres, url: '"+through+"', table: "+table+", timeout: 5s, retry_for: 1m}", 1)
		dir, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
		pl, err := spec.Parse([]byte(yml))
		if err != nil {
			t.Fatal(err)
		}
		begun := 0
		var warnings []string
		rep, err := Backfill(pl, BackfillOptions{Dir: dir, WindowsPerTx: 8,
			Crash: func(point string) {
				if point == "backfill-begun" {
					if begun++; begun == 2 && through == purl {
						p.Drop()
					}
				}
			},
			Warn: func(msg string) { warnings = append(warnings, msg) }})
		if err != nil {
			t.Fatalf("backfill through %s: %v", through, err)
		}
		return strings.ReplaceAll(jobtest.DumpPG(t, conn, table), table, "T"), rep, warnings
	}
	want, wantRep, _ := run(url)
	got, rep, warnings := run(purl)
	if rep.Applied != wantRep.Applied || rep.Windows != wantRep.Windows || rep.AlreadyApplied != wantRep.AlreadyApplied || rep.Windows <= 8 {
		t.Fatalf("report %+v, want %+v (more than one batch)", rep, wantRep)
	}
	if got != want {
		t.Fatalf("after a dropped connection the table differs:\n%s\nwant\n%s", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "revising the batch of 8 windows again") {
		t.Fatalf("warnings %q, want one retry", warnings)
	}
}
