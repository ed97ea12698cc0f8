package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// resumeBase is the spec the restore tests change. Its results go to
// Postgres, but openCheckpoints, which these tests call, connects to
// nothing for them.
const resumeBase = `
name: resume
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: postgres, url: 'postgres://weir@127.0.0.1:5432/weir', table: results, batch_rows: 500}
  dead_letter: {type: jsonl, path: bad.jsonl}
`

// resumeBaseV1 is the meta a weir before meta formats (format 1) wrote
// for resumeBase, byte for byte.
const resumeBaseV1 = `{"aggregate":[{"Name":"orders","Fn":"count","Field":""},{"Name":"total","Fn":"sum","Field":"amount"}],"allowed_lateness":null,"key":["user_id"],"sinks":{"Results":{"Type":"postgres","Path":"","Table":"results","URL":"postgres://weir@127.0.0.1:5432/weir","Subject":"","Dir":"","Retention":null,"Brokers":null,"Topic":"","MarkerTopic":"","TLS":false,"SASL":null},"Late":null,"LatePartial":null,"DeadLetter":{"Type":"jsonl","Path":"bad.jsonl","Table":"","URL":"","Subject":"","Dir":"","Retention":null,"Brokers":null,"Topic":"","MarkerTopic":"","TLS":false,"SASL":null}},"source":{"Type":"file","Path":"in.jsonl","Format":"","Channels":0,"FinalWatermark":null,"Timestamp":{"Source":"","Field":"","Unit":"","Checks":null,"MaxFuture":null},"Generator":null,"Kafka":null,"NATS":null},"time":"event","trigger":null,"watermark":{"Type":"","MaxOutOfOrderness":1000,"IdleTimeout":null,"Emit":"","Interval":null,"BacklogEvery":null,"Heartbeat":null,"MaxDrift":null},"window":{"Type":"tumbling","Size":60000,"Slide":null,"Gap":null,"Offset":null}}`

// edit applies replacements (old, new, old, new, ...) to spec, each of
// which must apply.
func edit(t *testing.T, spec string, repl ...string) string {
	t.Helper()
	for i := 0; i < len(repl); i += 2 {
		if !strings.Contains(spec, repl[i]) {
			t.Fatalf("%q is not in the spec", repl[i])
		}
		spec = strings.Replace(spec, repl[i], repl[i+1], 1)
	}
	return spec
}

// checkpointWith writes checkpoint 7, without parts, with meta into a new
// directory, which it returns.
func checkpointWith(t *testing.T, meta []byte) string {
	t.Helper()
	dir := t.TempDir()
	store, err := checkpoint.Open(dir, checkpoint.Options{Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := store.Begin(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reopen opens the checkpoints of dir for the spec yaml, as a run does,
// and returns its info lines or its error.
func reopen(t *testing.T, dir, yaml string) ([]string, error) {
	t.Helper()
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	var info []string
	c, err := openCheckpoints(p, path, RunOptions{Dir: t.TempDir(), CheckpointDir: dir, Info: func(m string) { info = append(info, m) }})
	if err != nil {
		return nil, err
	}
	if c.restored == nil || c.restored.ID != 7 {
		t.Fatalf("restored %+v, want checkpoint 7", c.restored)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	return info, nil
}

// TestResumeAcrossChanges: a checkpoint restores under a spec that changed
// only fields its state does not depend on, or added a sink, and the one
// info line names each change; a change of a field it depends on, or a
// removed sink, is refused naming the fields, with the --fresh hint. Both
// for a checkpoint of this weir (format 3), of the weir before (format 2,
// the same meta) and for one a weir before meta formats wrote (format 1, resumeBaseV1).
func TestResumeAcrossChanges(t *testing.T) {
	p, err := spec.Parse([]byte(resumeBase))
	if err != nil {
		t.Fatal(err)
	}
	if got := fingerprintV1(p); string(got) != resumeBaseV1 {
		t.Fatalf("format 1 meta of resumeBase:\n%s\nwant\n%s", got, resumeBaseV1)
	}
	const url = "url: 'postgres://weir@127.0.0.1:5432/weir'"
	resumed := []struct {
		name, spec, across string
		v1                 bool // format 1 recorded the changed fields
	}{
		{"unchanged", resumeBase, "", true},
		{"paths spelled with ./", edit(t, resumeBase, "path: in.jsonl", "path: ./in.jsonl", "path: bad.jsonl", "path: dir/../bad.jsonl"), "", true},
		{"url and added sink", edit(t, resumeBase, url, "url: 'postgres://weir@localhost:5432/weir?sslmode=disable'",
			"  dead_letter:", "  late: {type: jsonl, path: late.jsonl}\n  dead_letter:"),
			" across a changed sinks.results.url and an added sink sinks.late ", true},
		{"batch rows, timeout, alerts", edit(t, resumeBase, "batch_rows: 500", "batch_rows: 100, timeout: 5s", "sinks:", "alerts: {late_ratio: 0.005}\nsinks:"),
			" across a changed alerts.late_ratio, a changed sinks.results.batch_rows and a changed sinks.results.timeout ", false},
		{"checkpoint and doctor settings", edit(t, resumeBase, "sinks:", "checkpoint: {dir: ck, interval: 1s, retain: 9}\ndoctor: {busy_high: 0.5}\nsinks:"),
			" across a changed checkpoint.dir, a changed checkpoint.interval, a changed checkpoint.retain and a changed doctor.busy_high ", false},
	}
	refused := []struct {
		name, spec, fields string
	}{
		{"window size", edit(t, resumeBase, "size: 1m", "size: 2m"), "whose window differs from this spec's (window.size)"},
		{"key", edit(t, resumeBase, "key: [user_id]", "key: [user_id, region]"), "whose key differs from this spec's (key)"},
		{"aggregate and bound", edit(t, resumeBase, "fn: sum", "fn: max", "max_out_of_orderness: 1s", "max_out_of_orderness: 2s"),
			"whose aggregate, watermark differ from this spec's (aggregate[1].fn, watermark.max_out_of_orderness)"},
		{"results table", edit(t, resumeBase, "table: results", "table: results2"), "whose sinks differ from this spec's (sinks.results.table)"},
		{"removed sink", edit(t, resumeBase, "  dead_letter: {type: jsonl, path: bad.jsonl}\n", ""), "whose sinks differ from this spec's (sinks.dead_letter removed)"},
		{"source path", edit(t, resumeBase, "path: in.jsonl", "path: other.jsonl"), "whose source differs from this spec's (source.path)"},
	}
	for _, format := range []string{"format 3", "format 2", "format 1"} {
		meta := fingerprint(p)
		switch {
		case format == "format 1":
			meta = []byte(resumeBaseV1)
		case !bytes.HasPrefix(meta, []byte(`{"format":3,`)):
			t.Fatalf("meta %s, want format 3", meta)
		case format == "format 2":
			meta = bytes.Replace(meta, []byte(`{"format":3,`), []byte(`{"format":2,`), 1)
		}
		for _, c := range resumed {
			dir := checkpointWith(t, meta)
			info, err := reopen(t, dir, c.spec)
			if err != nil {
				t.Fatalf("%s, %s: %v", format, c.name, err)
			}
			across := c.across
			if format == "format 1" && !c.v1 {
				across = "" // the fields format 1 did not record are not compared
			}
			want := fmt.Sprintf("resuming from checkpoint 7 in %s%s(--fresh starts over)", dir, cmpOr(across, " "))
			if len(info) != 1 || info[0] != want {
				t.Fatalf("%s, %s: info %q, want %q", format, c.name, info, want)
			}
		}
		for _, c := range refused {
			dir := checkpointWith(t, meta)
			_, err := reopen(t, dir, c.spec)
			want := "checkpoint 7 in " + dir + ": it was written by a job " + c.fields + "; restore with the spec that wrote it, or start over with --fresh (the outputs start over too)"
			if err == nil || err.Error() != want {
				t.Fatalf("%s, %s: %v, want %s", format, c.name, err, want)
			}
			// The refusal keeps the checkpoint.
			if _, err := reopen(t, dir, resumeBase); err != nil {
				t.Fatalf("%s, %s: after the refusal: %v", format, c.name, err)
			}
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestResumeFormats: a meta of a format newer than this weir reads is
// refused, naming the formats, and kept; a meta that is no weir job's is
// refused; a format 1 meta holding a field this weir does not know is
// compared section by section, as weir did before formats.
func TestResumeFormats(t *testing.T) {
	future := checkpointWith(t, []byte(`{"format":4,"state":{},"something":"new"}`))
	_, err := reopen(t, future, resumeBase)
	want := "checkpoint 7 in " + future + ": it was written by a newer weir, in job checkpoint format 4, and this weir reads formats 1 to 3; resume with that weir (or a later one), or start over with --fresh (the outputs start over too)"
	if err == nil || err.Error() != want {
		t.Fatalf("future format: %v, want %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(future, "chk-00000000000000000007", "MANIFEST")); err != nil {
		t.Fatalf("the refused checkpoint is gone: %v", err)
	}
	for _, meta := range []string{`not json`, `{"format":"two"}`, `{"format":1}`} {
		_, err := reopen(t, checkpointWith(t, []byte(meta)), resumeBase)
		if err == nil || !errors.Is(err, errForeignMeta) {
			t.Fatalf("meta %s: %v", meta, err)
		}
	}
	// A format 1 meta with a field this weir lacks: sections compared
	// whole, so that even its changed URL refuses.
	odd := strings.Replace(resumeBaseV1, `"Subject":""`, `"Subject":"","Compression":"zstd"`, 1)
	_, err = reopen(t, checkpointWith(t, []byte(odd)), resumeBase)
	if err == nil || !strings.Contains(err.Error(), "whose sinks differ from this spec's; restore with") {
		t.Fatalf("format 1 meta with an unknown field: %v", err)
	}
}

// TestFormat1CheckpointRestores: a crashed run's checkpoint, rewritten
// with the meta of format 1 that a weir before meta formats wrote, still
// restores, and the resumed run ends with the outputs of a run that
// never crashed.
func TestFormat1CheckpointRestores(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", 3)
	id := withMeta(t, ck, fingerprintV1(p))
	var info []string
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, Info: func(m string) { info = append(info, m) }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("resuming from checkpoint %d in %s (--fresh starts over)", id, ck); len(info) != 1 || info[0] != want {
		t.Fatalf("info %q, want %q", info, want)
	}
	for _, f := range []string{"out.jsonl", "late.jsonl", "bad.jsonl"} {
		want, _ := os.ReadFile(filepath.Join(refDir, f))
		got, _ := os.ReadFile(filepath.Join(dir, f))
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes after the resume, want %d", f, len(got), len(want))
		}
	}
	if !bytes.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary\n%s\nwant\n%s", sum.JSON(), refSum.JSON())
	}
}

// withMeta replaces the checkpoints in dir by the newest one, with its
// parts and meta instead of its own, and returns its id.
func withMeta(t *testing.T, dir string, meta []byte) int64 {
	t.Helper()
	store, err := checkpoint.Open(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, ok, err := store.Latest()
	if err != nil || !ok {
		t.Fatalf("no checkpoint in %s: %v", dir, err)
	}
	parts := map[string][]byte{}
	for _, name := range cp.Parts {
		if parts[name], err = store.ReadPart(cp, name); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	chks, err := filepath.Glob(filepath.Join(dir, "chk-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chks {
		if err := os.RemoveAll(c); err != nil {
			t.Fatal(err)
		}
	}
	store, err = checkpoint.Open(dir, checkpoint.Options{Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	pc, err := store.Begin(cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range parts {
		if err := pc.WritePart(name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.Commit(); err != nil {
		t.Fatal(err)
	}
	return cp.ID
}

// resumeChanged crashes job after its crash-th checkpoint, then resumes
// it under changed (another spec) until it ends; it returns the run's
// directory, the resumed run's summary and its info lines.
func resumeChanged(t *testing.T, job, changed string, crash int) (string, Summary, []string) {
	t.Helper()
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := spec.Parse([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", crash)
	var info []string
	j, err := Open(p2, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond,
		Info: func(m string) { info = append(info, m) }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum, info
}

// TestResumeAddedSink: a crashed run without a dead-letter sink resumes
// under a spec that adds one and changes an alert threshold; the info
// line names both, the results and late records are a run's that never
// crashed, and the added sink holds the dead letters from the checkpoint
// on: a part, at the end, of what a run with it from the start writes.
func TestResumeAddedSink(t *testing.T) {
	full := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	refDir, refSum := runSpec(t, full, nil, RunOptions{Deterministic: true})
	without := edit(t, full, "  dead_letter: {type: jsonl, path: bad.jsonl}\n", "")
	changed := edit(t, full, "sinks:", "alerts: {late_ratio: 0.005}\nsinks:")
	dir, sum, info := resumeChanged(t, without, changed, 3)
	if len(info) != 1 || !strings.Contains(info[0], "resuming from checkpoint") ||
		!strings.HasSuffix(info[0], " across a changed alerts.late_ratio and an added sink sinks.dead_letter (--fresh starts over)") {
		t.Fatalf("info %q", info)
	}
	read := func(d, f string) []byte {
		b, err := os.ReadFile(filepath.Join(d, f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, f := range []string{"out.jsonl", "late.jsonl"} {
		if got, want := read(dir, f), read(refDir, f); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes after the resume, want %d", f, len(got), len(want))
		}
	}
	got, want := read(dir, "bad.jsonl"), read(refDir, "bad.jsonl")
	if len(got) == 0 || len(got) >= len(want) || !bytes.HasSuffix(want, got) || got[0] != '{' {
		t.Fatalf("the added sink holds %d bytes, want the end of the %d of a run with it", len(got), len(want))
	}
	if !bytes.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary\n%s\nwant\n%s", sum.JSON(), refSum.JSON())
	}
}

// TestResumePostgresURL: a crashed run into Postgres resumes under a spec
// whose connection string is spelled differently (another parameter), and
// a late sink added; the info line names both, and the table is a run's
// that never crashed.
func TestResumePostgresURL(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	ref, table := jobtest.PgTable(t, conn, "weir_ref"), jobtest.PgTable(t, conn, "weir_resume")
	job := func(table, url string) string {
		return edit(t, fmt.Sprintf(jobtest.OrderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table)
	}
	runSpec(t, job(ref, url), nil, RunOptions{Deterministic: true})
	other := url + "&application_name=weir_resumed"
	if !strings.Contains(url, "?") {
		other = url + "?application_name=weir_resumed"
	}
	base := edit(t, job(table, url), "  late: {type: jsonl, path: late.jsonl}\n", "")
	_, _, info := resumeChanged(t, base, job(table, other), 3)
	if len(info) != 1 || !strings.HasSuffix(info[0], " across a changed sinks.results.url and an added sink sinks.late (--fresh starts over)") {
		t.Fatalf("info %q", info)
	}
	strip := func(s string) string { return strings.ReplaceAll(s, ref, table) }
	if got, want := jobtest.DumpPG(t, conn, table), strip(jobtest.DumpPG(t, conn, ref)); got != want || want == "" {
		t.Fatalf("table after the resume:\n%.2000s\nwant\n%.2000s", got, want)
	}
}

// TestResumeRefusesLostTable: a crashed run into SQLite whose database is
// removed before the resume is refused, naming the table and the
// checkpoint: the resume would not write again the rows the checkpoint
// covers (it recreated the table and ran on, its summary counting rows
// the table did not hold). With the database kept, it resumes.
func TestResumeRefusesLostTable(t *testing.T) {
	p, err := spec.Parse([]byte(fmt.Sprintf(jobtest.OrderJob, "sqlite", "out.db")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond}
	crashRun(t, p, o, "after-manifest", 3)
	saved := t.TempDir()
	for _, f := range []string{"out.db", "out.db-wal", "out.db-shm"} {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(saved, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	j, err := Open(p, o)
	if err == nil {
		j.Run(context.Background())
		t.Fatal("a resume into a removed database was not refused")
	}
	if !strings.Contains(err.Error(), "table results holds no rows of run") || !strings.Contains(err.Error(), "but checkpoint 3 covers") {
		t.Fatalf("the refusal: %v", err)
	}
	for _, f := range []string{"out.db", "out.db-wal", "out.db-shm"} {
		os.Remove(filepath.Join(dir, f)) // the empty database the refused open made
		if err := os.Rename(filepath.Join(saved, f), filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	j, err = Open(p, o)
	if err != nil {
		t.Fatalf("a resume into the kept database: %v", err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
