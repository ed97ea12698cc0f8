package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// verifyInput has two too-late records (amounts 4 and 6), so a backfill
// has entries to apply.
const verifyInput = `{"user_id":"a","amount":1,"ts":1767225600000}
{"user_id":"b","amount":2,"ts":1767225601000}
{"user_id":"a","amount":3,"ts":1767225615000}
{"user_id":"a","amount":4,"ts":1767225602000}
{"user_id":"b","amount":5,"ts":1767225625000}
{"user_id":"b","amount":6,"ts":1767225603000}
`

// verifyJob: the source, the watermark's emit, the results sink (and
// anything after it).
const verifyJob = `name: verify
source: %s
watermark: {max_out_of_orderness: 1s%s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  late: {type: ledger, dir: ledger}
  results: %s
`

// TestBackfillVerifyRefused: weir backfill --verify of a job whose source
// cannot be read again (stdin; Kafka, with jsonl results and the archive),
// or whose results file is gone, refuses before it applies anything: it exits 2 naming the source, and
// every file of the job (results, ledger, archive) is as it was. The
// Kafka job's files are written by the same job reading a file, whose
// watermarks follow every record (a Kafka source's are periodic, so
// which records are too late would depend on timing); a backfill reads
// only the ledger and the results, not the source.
func TestBackfillVerifyRefused(t *testing.T) {
	for _, c := range []struct{ name, source, results, want string }{
		{"stdin", "{type: stdin}", "{type: sqlite, path: results.db}", "a stdin source cannot be read again"},
		{"kafka", "{type: kafka, kafka: {brokers: [%s], topic: in, stop_at_end: true}}", "{type: jsonl, path: results.jsonl}\narchive: {dir: archive}", "a kafka source cannot be read again (weir reads again from file or generator)"},
		// The results file deleted: the comparison could not read it (a
		// helper's trial: the backfill applied, then --verify failed).
		{"results gone", "{type: file, path: in.jsonl}", "{type: jsonl, path: results.jsonl}\narchive: {dir: archive}", "results.jsonl is not there (has the job run?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJob := func(source, emit string) {
				t.Helper()
				job := fmt.Sprintf(verifyJob, source, emit, c.results)
				if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			source := c.source
			if c.name == "kafka" {
				source = fmt.Sprintf(source, kafkaInput(t, verifyInput))
				writeJob("{type: file, path: in.jsonl}", ", emit: every_record")
				if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(verifyInput), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				writeJob(source, ", emit: every_record")
				if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(verifyInput), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			run := IO{Dir: dir, Stdin: strings.NewReader(verifyInput), Stdout: &stdout, Stderr: &stderr}
			if code := Main(context.Background(), []string{"run", "job.yaml"}, run); code != ExitOK {
				t.Fatalf("weir run exited %d: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "too late: 2 to the side output") {
				t.Fatalf("the run put no records in the ledger, so the test proves nothing:\n%s", stderr.String())
			}
			switch c.name {
			case "kafka":
				writeJob(source, "")
				os.Remove(filepath.Join(dir, "in.jsonl"))
			case "results gone":
				if err := os.Remove(filepath.Join(dir, "results.jsonl")); err != nil {
					t.Fatal(err)
				}
			}
			before := files(t, dir)
			stdout.Reset()
			stderr.Reset()
			code := Main(context.Background(), []string{"backfill", "job.yaml", "--verify"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr})
			if code != ExitUsage || !strings.Contains(stderr.String(), c.want) || !strings.Contains(stderr.String(), "nothing was applied") {
				t.Fatalf("weir backfill --verify exited %d, want %d with %q:\nstdout: %s\nstderr: %s", code, ExitUsage, c.want, stdout.String(), stderr.String())
			}
			if d := cmp.Diff(before, files(t, dir)); d != "" {
				t.Fatalf("weir backfill --verify changed the job's files (-before +after):\n%s", d)
			}
			// Without --verify the same backfill applies both entries.
			stdout.Reset()
			if code := Main(context.Background(), []string{"backfill", "job.yaml"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr}); code != ExitOK || !strings.Contains(stdout.String(), "backfill applied 2 entries") {
				t.Fatalf("weir backfill exited %d: %s %s", code, stdout.String(), stderr.String())
			}
		})
	}
}

// files reads every file under dir but job.yaml, by relative path.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "job.yaml" {
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kafkaInput starts kfake with topic in (one partition) holding the
// lines, in order, and returns its address.
func kafkaInput(t *testing.T, lines string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		recs = append(recs, &kgo.Record{Value: []byte(l)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()[0]
}
