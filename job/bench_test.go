package job

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/genio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/benchutil"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

const benchRecords = 200_000

// benchInput writes benchRecords generated orders (in order, no bad ones)
// to a file once per benchmark.
func benchInput(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "orders.jsonl")
	src, err := genio.New(genio.Options{Records: benchRecords, Rate: 1000, Keys: 1000, Start: 1767225600000, Seed: 1,
		Disorder: []genio.Band{{Share: 0.9, Max: 5000}, {Share: 0.1, Min: 5000, Max: 120_000}}})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r, _ := src.Open(context.Background(), 0, 1)
	out := &lineWriter{w: w}
	for {
		st, err := r.Read(context.Background(), out)
		if err != nil {
			b.Fatal(err)
		}
		if st == weir.Done {
			break
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

type lineWriter struct{ w *bufio.Writer }

func (l *lineWriter) Emit(_ etime.Time, v fileio.Line) { l.w.Write(v.Text); l.w.WriteByte('\n') }
func (l *lineWriter) EmitWatermark(etime.Time)         {}
func (l *lineWriter) MarkIdle()                        {}
func (l *lineWriter) MarkActive()                      {}

const benchJob = `
name: bench
source: {type: file, path: %s}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 1m
aggregate: [{name: orders, fn: count}, {name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: %s}
  late: {type: jsonl, path: %s}
`

// BenchmarkJob runs a declarative job (file source, decode and timestamp
// checks, 1-minute tumbling count and sum per user, jsonl results) over
// 200k records; compare its ns/record with BenchmarkHandLoop's:
//
//	go test -run x -bench 'Job|HandLoop' ./job/
func BenchmarkJob(b *testing.B) {
	in := benchInput(b)
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("p%d", par), func(b *testing.B) {
			dir := b.TempDir()
			s, err := spec.Load(fmt.Appendf(nil, benchJob, in, filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "late.jsonl")))
			if err != nil {
				b.Fatal(err)
			}
			p, err := spec.Compile(s)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				j, err := Open(p, RunOptions{Parallelism: par})
				if err != nil {
					b.Fatal(err)
				}
				sum, err := j.Run(context.Background())
				if err != nil || sum.Get("records_in") != benchRecords {
					b.Fatal(err, string(sum.JSON()))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
		})
	}
}

// BenchmarkHandLoop is the same computation written by hand on one
// goroutine: scan lines, parse with fastjson, check the timestamp, keep a
// map of (user, window) -> count and sum, fire windows as a 5 s bounded
// watermark passes them, write results as JSON lines. No lateness, side
// output or dead letters: the practical floor on this machine.
func BenchmarkHandLoop(b *testing.B) {
	in := benchInput(b)
	out := filepath.Join(b.TempDir(), "out.jsonl")
	b.ResetTimer()
	for range b.N {
		if n := handLoop(b, in, out); n != benchRecords {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
}

func handLoop(b *testing.B, in, out string) int {
	type key struct {
		user  string
		start int64
	}
	type acc struct{ n, sum int64 }
	f, err := os.Open(in)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	o, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	w := bufio.NewWriter(o)
	defer w.Flush()
	sc := bufio.NewScanner(f)
	var p fastjson.Parser
	wins := map[key]*acc{}
	var maxTS int64 = -1 << 63
	now := time.Now().UnixMilli()
	records := 0
	lastFire := int64(-1 << 63)
	for sc.Scan() {
		records++
		v, err := p.ParseBytes(sc.Bytes())
		if err != nil {
			continue
		}
		ts := v.GetInt64("ts")
		if ts < 946684800000 || ts > now+3600_000 {
			continue
		}
		start := ts - ts%60_000
		k := key{string(v.GetStringBytes("user_id")), start}
		a := wins[k]
		if a == nil {
			a = &acc{}
			wins[k] = a
		}
		a.n++
		a.sum += v.GetInt64("amount")
		maxTS = max(maxTS, ts)
		if wm := maxTS - 5001; wm-lastFire >= 1000 {
			lastFire = wm
			for k, a := range wins {
				if k.start+60_000-1 <= wm {
					fmt.Fprintf(w, `{"user_id":%q,"window_start":%d,"window_end":%d,"orders":%d,"total":%d}`+"\n", k.user, k.start, k.start+60_000, a.n, a.sum)
					delete(wins, k)
				}
			}
		}
	}
	for k, a := range wins {
		fmt.Fprintf(w, `{"user_id":%q,"window_start":%d,"window_end":%d,"orders":%d,"total":%d}`+"\n", k.user, k.start, k.start+60_000, a.n, a.sum)
	}
	return records
}

// BenchmarkCheckpointCost runs a job holding WEIR_BENCH_KEYS (default
// 200,000) keys of aggregate state in 1-hour windows over 16x as many
// generated records (long enough for several checkpoints at 5 s),
// without checkpoints and with checkpoints every 5 s and 1 s, and reports
// records/s, the process CPU time, the number of checkpoints and the mean
// size of one. The throughput ratio against interval=0s is the cost; the
// extra CPU time divided by the checkpoints is the cost of one:
//
//	WEIR_BENCH_KEYS=1000000 go test -run x -bench CheckpointCost -benchtime 1x ./job/
func BenchmarkCheckpointCost(b *testing.B) {
	keys := benchKeys()
	job := fmt.Sprintf(`
name: ckcost
source:
  type: generator
  generator: {records: %d, keys: %d, duration: 50m, seed: 2}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1h}
aggregate: [{name: n, fn: count}, {name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`, 16*keys, keys)
	s, err := spec.Parse([]byte(job))
	if err != nil {
		b.Fatal(err)
	}
	for _, iv := range []time.Duration{0, 5 * time.Second, time.Second} {
		b.Run(fmt.Sprint("interval=", iv), func(b *testing.B) {
			cpu0 := benchutil.CPUTime()
			for range b.N {
				dir := b.TempDir()
				o := RunOptions{Dir: dir, Parallelism: 2}
				if iv > 0 {
					o.CheckpointDir, o.CheckpointInterval = filepath.Join(dir, "ck"), iv
				}
				j, err := Open(s, o)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := j.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if iv > 0 {
					var size int64
					var n int
					filepath.Walk(filepath.Join(dir, "ck"), func(p string, fi os.FileInfo, err error) error {
						if err == nil && fi.Mode().IsRegular() {
							size += fi.Size()
						}
						if err == nil && fi.IsDir() && strings.HasPrefix(fi.Name(), "chk-") {
							n++
						}
						return nil
					})
					b.ReportMetric(float64(j.ck.last.Load()), "checkpoints")
					b.ReportMetric(float64(size)/float64(max(n, 1))/1e6, "MB/checkpoint")
				}
			}
			b.ReportMetric((benchutil.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(16*keys)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkStateBackend runs a session job with WEIR_BENCH_KEYS (default
// 200,000) distinct keys, one record each, so every key holds a live
// session window until the end, on the memory and the pebble backends:
//
//	WEIR_BENCH_KEYS=1000000 go test -run x -bench StateBackend -benchtime 1x ./job/
func BenchmarkStateBackend(b *testing.B) {
	keys := benchKeys()
	for _, backend := range []string{"memory", "pebble"} {
		b.Run("backend="+backend, func(b *testing.B) {
			job := fmt.Sprintf(`
name: sessions
source:
  type: generator
  generator: {records: %d, keys: %d, duration: 20m, seed: 3}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: session, gap: 30m}
aggregate: [{name: n, fn: count}, {name: total, fn: sum, field: amount}]
state: {backend: %s}
sinks:
  results: {type: jsonl, path: out.jsonl}
`, keys, keys, backend)
			s, err := spec.Parse([]byte(job))
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				j, err := Open(s, RunOptions{Dir: b.TempDir(), Parallelism: 2})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := j.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// benchKeys is WEIR_BENCH_KEYS, default 200,000.
func benchKeys() int {
	keys := 200_000
	if s := os.Getenv("WEIR_BENCH_KEYS"); s != "" {
		fmt.Sscan(s, &keys)
	}
	return keys
}

// BenchmarkAggregateAdd decodes an order and adds it to an accumulator of
// sum, avg, min and max of its amount: integer amounts (the int64 fast
// path) and amounts of two decimals (exact decimals; float64 before
// them). Neither allocates per record.
//
//	go test -run x -bench AggregateAdd -benchmem ./job/
func BenchmarkAggregateAdd(b *testing.B) {
	p, err := spec.Parse([]byte(jobtest.DecimalJob))
	if err != nil {
		b.Fatal(err)
	}
	for _, amounts := range []struct{ name, format string }{{"int", "%d"}, {"decimal", "%d.%02d"}} {
		b.Run(amounts.name, func(b *testing.B) {
			dec := record.NewDecoder(p, clock.Real{})
			agg := record.NewAggregator(p, false)
			lines := make([][]byte, 1024)
			for i := range lines {
				args := []any{i * 37 % 100_000}
				if amounts.name == "decimal" {
					args = append(args, i%100)
				}
				lines[i] = fmt.Appendf(nil, `{"k":"a","ts":1767225600000,"amount":`+amounts.format+`}`, args...)
			}
			ac := agg.CreateAccumulator()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r, err := dec.Decode(fileio.Line{Kind: fileio.Data, No: int64(i), Text: lines[i%len(lines)]})
				if err != nil {
					b.Fatal(err)
				}
				agg.Add(ac, r)
			}
		})
	}
}
