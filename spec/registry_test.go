package spec

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/suggest"

	// The built-in kinds, which the specs of these tests name.
	"github.com/weirstream/weir/connector/all"
)

// TestKindsMatchTheSpec: every setting a registered source kind declares
// is a field of the spec's source (nested blocks included), and every
// field of a sink is a setting of some sink kind, so that the registry
// (weir connectors) and the YAML cannot drift apart. A sink kind may
// declare settings the spec's Sink lacks: its own, which Load keeps in
// Sink.Extra (TestKindOwnSettings).
func TestKindsMatchTheSpec(t *testing.T) {
	sinkFields := yamlFields(reflect.TypeFor[Sink](), "")
	sourceFields := yamlFields(reflect.TypeFor[Source](), "")
	taken := map[string]bool{}
	for _, k := range connector.Default.Kinds() {
		for _, f := range k.Fields(false) {
			taken[f.Name] = true
		}
		for _, f := range k.Fields(true) {
			if !slices.Contains(sourceFields, f.Name) {
				t.Errorf("source kind %s declares %s, which is not a field of the source", k.Name, f.Name)
			}
		}
	}
	for _, f := range sinkFields {
		if f != "type" && !strings.Contains(f, ".") && !taken[f] {
			t.Errorf("sink field %s is a setting of no sink kind", f)
		}
	}
	if got, want := connector.Default.Sources(), []string{"file", "stdin", "generator", "kafka", "nats", "nexmark"}; !slices.Equal(got, want) {
		t.Errorf("source kinds %v, want %v (the order of validate's messages)", got, want)
	}
	if got, want := connector.Default.Sinks(connector.RoleResults), []string{"jsonl", "stdout", "blackhole", "kafka", "postgres", "nats", "sqlite"}; !slices.Equal(got, want) {
		t.Errorf("results kinds %v, want %v", got, want)
	}
}

// yamlFields lists the yaml names of t's fields and, one level down, of
// its nested structs (kafka.topic).
func yamlFields(t reflect.Type, prefix string) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" {
			continue
		}
		names = append(names, prefix+name)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if prefix == "" && ft.Kind() == reflect.Struct && (name == "kafka" || name == "nats" || name == "generator" || name == "nexmark") {
			names = append(names, yamlFields(ft, name+".")...)
		}
	}
	return names
}

// TestSettingOfAnotherKind: a field of another kind is refused at its
// own path, naming what the kind takes and which kinds have it; an empty
// registry names the import that fills it.
func TestSettingOfAnotherKind(t *testing.T) {
	for _, c := range []struct{ yaml, path, msg, fix string }{
		{"sinks: {results: {type: kafka, brokers: ['127.0.0.1:9092'], topic: t, table: x}}", "sinks.results.table",
			"table is not a setting of a kafka sink", "remove it; a kafka sink takes brokers, topic, marker_topic, tls, sasl, columns, primary_key (table is a setting of postgres, sqlite sinks)"},
		{"sinks: {late: {type: ledger, dir: l, path: x}}", "sinks.late.path",
			"path is not a setting of a ledger sink", "remove it; a ledger sink takes dir, retention (path is a setting of jsonl, sqlite sinks)"},
		{"sinks: {results: {type: stdout, timeout: 5s}}", "sinks.results.timeout",
			"timeout is not a setting of a stdout sink", "remove it; a stdout sink takes columns (timeout is a setting of postgres sinks)"},
		{"sinks: {results: {type: postgre, url: x}}", "sinks.results.type",
			`unknown value "postgre"`, `did you mean "postgres"? (use one of jsonl, stdout, blackhole, kafka, postgres, nats, sqlite)`},
		{"sinks: {late: {type: sqlite, path: x.db}}", "sinks.late.type",
			`unknown value "sqlite"`, "use one of jsonl, stdout, blackhole, kafka, postgres, nats, ledger"},
	} {
		yaml := "name: j\nsource: {type: file, path: in.jsonl}\nkey: k\nwindow: {type: tumbling, size: 1m}\naggregate: [{fn: count, name: n}]\n" + c.yaml + "\n"
		_, err := Parse([]byte(yaml))
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("%s: %v, want Errors", c.yaml, err)
		}
		i := slices.IndexFunc(es, func(e FieldError) bool { return e.Path == c.path })
		if i < 0 || es[i].Msg != c.msg || es[i].Fix != c.fix {
			t.Errorf("%s: %v\nwant %s: %s; %s", c.yaml, es, c.path, c.msg, c.fix)
		}
	}
	s, err := Load([]byte("name: j\nsource: {type: file, path: in.jsonl}\nwindow: {type: tumbling, size: 1m}\naggregate: [{fn: count, name: n}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = CompileWith(s, connector.NewRegistry())
	if err == nil || !strings.Contains(err.Error(), "import github.com/weirstream/weir/connector/all") {
		t.Errorf("an empty registry: %v, want the import named", err)
	}
}

// TestKindChecks: each kind's Check reports at the setting's own path
// with the fix it had when the spec checked it, and gives defaults.
func TestKindChecks(t *testing.T) {
	for _, c := range []struct {
		sinks string
		want  []string // path: msg; fix
	}{
		{"{results: {type: kafka, brokers: ['nohost', '127.0.0.1:9092'], sasl: {mechanism: md5}}}", []string{
			`sinks.results.brokers[0]: "nohost" is not host:port; such as 127.0.0.1:9092`,
			"sinks.results.topic: missing; name the topic for results, such as order-stats",
			`sinks.results.sasl.mechanism: unknown value "md5"; use one of plain, scram-sha-256, scram-sha-512`,
			"sinks.results.sasl.user: missing; give the user name"}},
		{"{results: {type: postgres, url: 'postgres://x', timeout: 0s, batch_rows: -1, table: 'a-b'}}", []string{
			"sinks.results.timeout: 0s is not positive; the timeout must be positive, such as 1m",
			"sinks.results.batch_rows: -1 is negative; give the rows per transaction, such as 1000 (the default)",
			`sinks.results.table: "a-b" is not a plain SQL name; use letters, digits and _, such as order_stats, or a schema and a table, such as analytics.order_stats`}},
		{"{results: {type: sqlite}, late: {type: ledger, retention: 0s}, dead_letter: {type: nats}}", []string{
			"sinks.results.path: missing; a sqlite sink needs a file path, such as results.db",
			"sinks.late.dir: missing; a ledger needs a directory, such as ledger",
			"sinks.late.retention: 0s is not positive; the retention must be positive, such as 1m",
			"sinks.dead_letter.subject: missing; name the subject results are published to; a JetStream stream must store it"}},
		{"{results: {type: jsonl}}", []string{"sinks.results.path: missing; a jsonl sink needs a file path, such as results.jsonl"}},
	} {
		wantErrors(t, checkJob+"sinks: "+c.sinks+"\n", c.want)
	}
	p, err := Parse([]byte(checkJob + "sinks: {results: {type: kafka, brokers: ['127.0.0.1:9092'], topic: out}, late: {type: postgres, url: 'postgres://x'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, l := p.Sinks.Primary(), p.Sinks.Late; r.MarkerTopic != "out-weir-checkpoints" || l.Table != "late" {
		t.Errorf("defaults: marker topic %q, late table %q", r.MarkerTopic, l.Table)
	}
}

// wantErrors parses job and checks that it fails with exactly want, each
// error as "path: msg; fix".
func wantErrors(t *testing.T, job string, want []string) {
	t.Helper()
	_, err := Parse([]byte(job))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("%s: %v, want Errors", job, err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Path+": "+e.Msg+"; "+e.Fix)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %q\nwant %q", job, got, want)
	}
}

const checkJob = "name: j\nsource: {type: file, path: in.jsonl}\nwatermark: {max_out_of_orderness: 1s}\nkey: k\nwindow: {type: tumbling, size: 1m}\naggregate: [{fn: count, name: n}]\n"

// TestNewKind: a kind registered in a registry of its own is one a spec
// can name, with its settings and checks, without a change to the spec.
func TestNewKind(t *testing.T) {
	r := connector.NewRegistry()
	r.MustRegister(connector.Kind{Name: "file", Doc: "a file", Source: &connector.SourceKind{Fields: []connector.Field{{Name: "path", Doc: "the file"}}}},
		connector.Kind{Name: "dirsink", Doc: "results in a directory", Sink: &connector.SinkKind{Roles: connector.RoleResults,
			Fields: []connector.Field{{Name: "dir", Doc: "the directory"}},
			Check: func(c connector.Checker, output string) {
				if !strings.HasPrefix(c.String("dir"), "/") {
					c.Report("dir", "not absolute", "give /data/"+output)
				}
			}}})
	s, err := Load([]byte(strings.ReplaceAll(checkJob, "key: k\n", "") + "sinks: {results: {type: dirsink, dir: rel, path: x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = CompileWith(s, r)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 || es[0].Msg != "path is not a setting of a dirsink sink" || es[1].Path != "sinks.results.dir" || es[1].Fix != "give /data/results" {
		t.Fatalf("a new kind: %v", err)
	}
}

// TestCompileLeavesItsInput: compiling fills in defaults in the plan's
// copy of the spec, not in the caller's, and compiling the same spec
// again gives the same plan.
func TestCompileLeavesItsInput(t *testing.T) {
	job := strings.Replace(checkJob, "aggregate: [{fn: count, name: n}]", "aggregate: [{fn: sum, field: a, name: s, type: decimal}]", 1)
	s, err := Load([]byte(job + "sinks: {late: {type: postgres, url: 'postgres://x'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := clone(s)
	p1, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, before) {
		t.Errorf("Compile changed its input:\n%+v\nwas\n%+v", s, before)
	}
	if p1.Sinks.Results == nil || p1.Sinks.Late.Table != "late" || s.Sinks.Results != nil || s.Sinks.Late.Table != "" {
		t.Errorf("defaults: the plan's results %v and late table %q, the input's %v and %q",
			p1.Sinks.Results, p1.Sinks.Late.Table, s.Sinks.Results, s.Sinks.Late.Table)
	}
	p2, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p1.Definition, p2.Definition) || !reflect.DeepEqual(p1.Sinks, p2.Sinks) {
		t.Errorf("compiled twice, the plans' definitions or sinks differ")
	}
}

// TestSourceKindChecks: a broker source's block is refused on another
// source, required on its own, and checked by its kind.
func TestSourceKindChecks(t *testing.T) {
	for _, c := range []struct{ source, want string }{
		{"{type: file, path: in.jsonl, kafka: {topic: t}}", "source.kafka: only a kafka source takes kafka settings; use type: kafka, or remove kafka"},
		{"{type: kafka}", "source.kafka: missing; a kafka source needs brokers and a topic: kafka: {brokers: [127.0.0.1:9092], topic: orders}"},
		{"{type: kafka, kafka: {brokers: [x]}}", `source.kafka.brokers[0]: "x" is not host:port; such as 127.0.0.1:9092|source.kafka.topic: missing; name the topic to read, such as orders`},
		{"{type: kafka, kafka: {brokers: ['h:1'], topic: t, start: committed, sasl: {mechanism: plain}}}", "source.kafka.sasl.user: missing; give the user name|source.kafka.group: missing; start: committed reads the offsets of a consumer group: name it"},
		{"{type: nats, nats: {start: soon}}", `source.nats.stream: missing; name the JetStream stream to read, such as ORDERS|source.nats.start: "soon" is not earliest, a stream sequence or an RFC 3339 time; such as earliest, 1000 or 2026-11-30T00:00:00Z`},
	} {
		job := strings.Replace(checkJob, "source: {type: file, path: in.jsonl}", "source: "+c.source, 1)
		_, err := Parse([]byte(job))
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("%s: %v, want Errors", c.source, err)
		}
		var got []string
		for _, e := range es {
			if strings.HasPrefix(e.Path, "source") {
				got = append(got, e.Path+": "+e.Msg+"; "+e.Fix)
			}
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.source, g, c.want)
		}
	}
}

// TestKindOwnSettings: a registered kind's settings that no Sink field
// holds are read from Sink.Extra, through connector.Settings; one its
// kind does not take is an unknown field at its line, with a
// did-you-mean among the kind's settings, where Load would report it.
func TestKindOwnSettings(t *testing.T) {
	r := connector.NewRegistry()
	var got []any
	r.MustRegister(connector.Kind{Name: "file", Doc: "a file", Source: &connector.SourceKind{Fields: []connector.Field{{Name: "path", Doc: "the file"}}}},
		connector.Kind{Name: "bucket", Doc: "results in a bucket", Sink: &connector.SinkKind{Roles: connector.RoleResults,
			Fields: []connector.Field{{Name: "bucket_name", Doc: "the bucket"}, {Name: "parts", Doc: "parts"}, {Name: "flush_every", Doc: "how often"}, {Name: "tags", Doc: "tags"}, {Name: "region", Doc: "the region"}},
			Check: func(c connector.Checker, output string) {
				c.Default("region", "eu")
				c.Positive("flush_every", "the flush interval")
				d, ok := c.Duration("flush_every")
				got = append(got, c.String("bucket_name"), c.Int("parts"), d, ok, c.Strings("tags"), c.Set("bucket_name"), c.Set("parts2"), c.String("region"))
			}}})
	base := strings.ReplaceAll(checkJob, "key: k\n", "")
	s, err := Load([]byte(base + "sinks:\n  results: {type: bucket, bucket_name: b1, parts: 3, flush_every: 2s, tags: [x, y]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompileWith(s, r); err != nil {
		t.Fatal(err)
	}
	if want := []any{"b1", 3, 2 * time.Second, true, []string{"x", "y"}, true, false, "eu"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the kind read %v, want %v", got, want)
	}

	// A typo of the kind's own setting, and one no kind has, with an
	// error Load reports on a later line: all three in document order.
	_, err = ParseWith([]byte(base+"sinks:\n  results:\n    type: bucket\n    bucket_nam: b1\n    colour: red\nwindow_typo: 1\n"), r)
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 ||
		es[0].Path != "sinks.results.bucket_nam" || es[0].Line == 0 || es[0].Fix != suggest.DidYouMean("bucket_name") ||
		es[1].Path != "sinks.results.colour" || es[1].Msg != `unknown field "colour"` ||
		es[2].Path != "window_typo" {
		t.Fatalf("unknown settings: %v", err)
	}

	// On one line, in the order written; a duration of the kind's own
	// that does not parse is refused as a duration field is.
	_, err = ParseWith([]byte(base+"sinks:\n  results: {type: bucket, zz: 1, flush_every: 5x, aa: 2}\n"), r)
	if !errors.As(err, &es) || len(es) != 3 || es[0].Path != "sinks.results.zz" || es[1].Path != "sinks.results.aa" ||
		es[2].Path != "sinks.results.flush_every" || !strings.Contains(es[2].Msg, "5x") {
		t.Fatalf("one line: %v", err)
	}
}

// TestRequiredSettings: a registered kind's required setting that a spec
// leaves out is reported at its field path, with the setting's doc, even
// when the kind's Check does not look at it.
func TestRequiredSettings(t *testing.T) {
	reg := connector.NewRegistry()
	reg.MustRegister(connector.Kind{Name: "box", Doc: "results in a box", Sink: &connector.SinkKind{Roles: connector.RoleResults,
		Fields: []connector.Field{{Name: "path", Required: true, Doc: "the box's file"}}}})
	_, err := ParseWith([]byte(`
source: {type: stdin}
window: {type: tumbling, size: 1m}
sinks:
  results: {type: box}
`), reg)
	if err == nil || !strings.Contains(err.Error(), "sinks.results.path: missing") || !strings.Contains(err.Error(), "a box sink needs path: the box's file") {
		t.Fatalf("a box sink without its required path: %v", err)
	}
	if _, err := ParseWith([]byte(`
source: {type: stdin}
window: {type: tumbling, size: 1m}
sinks:
  results: {type: box, path: b.out}
`), reg); err != nil && strings.Contains(err.Error(), "sinks.results.path") {
		t.Fatalf("a box sink with its path: %v", err)
	}
}

// TestSourceKindOwnSettings: a registered source kind takes settings no
// Source field holds, beside type or in a block of its own (Source.Extra):
// its Check reads them through connector.Settings and may default them,
// the runner reads them through SourceSettings, a required one left out
// is reported, and one the kind does not take is an unknown field at its
// line with a did-you-mean among the kind's settings.
func TestSourceKindOwnSettings(t *testing.T) {
	r := connector.NewRegistry()
	var got []any
	r.MustRegister(connector.Kind{Name: "queue", Doc: "a queue", Source: &connector.SourceKind{
		Fields: []connector.Field{{Name: "queue_url", Required: true, Doc: "the queue's address"}, {Name: "queue.batch", Doc: "messages per read"},
			{Name: "queue.wait", Doc: "the longest wait"}, {Name: "queue.tags", Doc: "tags"}, {Name: "region", Doc: "the region"}},
		Check: func(c connector.Checker) {
			c.Default("region", "eu")
			c.Positive("queue.wait", "the wait")
			d, ok := c.Duration("queue.wait")
			got = append(got, c.String("queue_url"), c.Int("queue.batch"), d, ok, c.Strings("queue.tags"), c.String("region"))
			if c.Int("queue.batch") > 100 {
				c.Report("queue.batch", "too large", "use at most 100")
			}
		}}},
		connector.Kind{Name: "jsonl", Doc: "lines", Sink: &connector.SinkKind{Roles: connector.AllRoles, Fields: []connector.Field{{Name: "path", Doc: "the file"}}}})
	job := "name: j\nsource:\n  type: queue\n%s\nwatermark: {max_out_of_orderness: 1s}\nkey: k\nwindow: {type: tumbling, size: 1m}\naggregate: [{fn: count, name: n}]\nsinks: {results: {type: jsonl, path: out.jsonl}}\n"
	p, err := ParseWith(fmt.Appendf(nil, job, "  queue_url: q://a\n  queue: {batch: 10, wait: 2s, tags: [x, y]}"), r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"q://a", 10, 2 * time.Second, true, []string{"x", "y"}, "eu"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the kind's Check read %v, want %v", got, want)
	}
	s := SourceSettings(p)
	if s.String("queue_url") != "q://a" || s.Int("queue.batch") != 10 || s.String("region") != "eu" || s.String("type") != "queue" {
		t.Errorf("the runner reads queue_url %q, queue.batch %d, region %q", s.String("queue_url"), s.Int("queue.batch"), s.String("region"))
	}
	var es Errors
	for _, c := range []struct{ settings, path, msg, fix string }{
		{"  queue: {batch: 10}", "source.queue_url", "missing", "a queue source needs queue_url: the queue's address"},
		{"  queue_url: q://a\n  queue_ulr: q://b", "source.queue_ulr", `unknown field "queue_ulr"`, suggest.DidYouMean("queue_url")},
		{"  queue_url: q://a\n  queue: {batch: 500}", "source.queue.batch", "too large", "use at most 100"},
		{"  queue_url: q://a\n  queue: {wait: 5x}", "source.queue.wait", "5x", ""},
	} {
		_, err := ParseWith(fmt.Appendf(nil, job, c.settings), r)
		if !errors.As(err, &es) || len(es) != 1 || es[0].Path != c.path || !strings.Contains(es[0].Msg, c.msg) || c.fix != "" && es[0].Fix != c.fix {
			t.Errorf("%q: %v, want %s: %s (%s)", c.settings, err, c.path, c.msg, c.fix)
		}
	}
	if _, err := ParseWith(fmt.Appendf(nil, job, "  queue_url: q://a\n  queue_ulr: q://b"), r); !errors.As(err, &es) || es[0].Line != 5 {
		t.Errorf("the unknown setting's line: %v, want line 5", err)
	}
}

// TestArchiveAsksTheKind: whether a job's results take the archive (and
// a ledger without one is warned about) is the results kind's to say
// (connector.SinkKind.Revise): a log kind the spec never heard of takes
// it; a kind backfill cannot revise and a results table refuse it.
func TestArchiveAsksTheKind(t *testing.T) {
	r := connector.NewRegistry()
	r.MustRegister(all.Kinds()...)
	r.MustRegister(connector.Kind{Name: "memlog", Doc: "results in memory", Sink: &connector.SinkKind{Roles: connector.RoleResults, Revise: connector.ReviseLog,
		OpenStore: func(context.Context, connector.StoreOpen) (connector.ResultsStore, error) {
			return nil, errors.New("not opened")
		}}})
	compile := func(results, archive string) (*Plan, error) {
		s, err := Load([]byte(checkJob + "sinks: {results: " + results + ", late: {type: ledger, dir: ledger}}\n" + archive))
		if err != nil {
			t.Fatal(err)
		}
		return CompileWith(s, r)
	}
	p, err := compile("{type: memlog}", "")
	if err != nil || !strings.Contains(p.Warnings.Error(), "cannot merge them into memlog results without an archive") {
		t.Fatalf("memlog results without the archive: %v, warnings %v", err, p.Warnings)
	}
	if _, err := compile("{type: memlog}", "archive: {dir: archive}\n"); err != nil {
		t.Fatalf("memlog results with the archive: %v", err)
	}
	for results, want := range map[string]string{
		"{type: nats, url: 'nats://127.0.0.1:4222', subject: s}": "weir backfill cannot revise nats results",
		"{type: sqlite, path: r.db}":                             "a sqlite results table keeps each window's accumulators in its rows",
	} {
		if _, err := compile(results, "archive: {dir: archive}\n"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s results with the archive: %v, want %q", results, err, want)
		}
	}
}
