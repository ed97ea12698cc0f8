package job

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// whereInput is records of three regions in order, some without amount.
func whereInput() (all, kept string, dropped int) {
	var a, k strings.Builder
	for i := range 400 {
		region := []string{"eu", "us", "apac"}[i%3]
		amount := fmt.Sprint(i % 17 * 10)
		if i%23 == 0 {
			amount = "null"
		}
		line := fmt.Sprintf(`{"user":"u%d","region":%q,"amount":%s,"ts":%d}`+"\n", i%5, region, amount, 1767225600000+int64(i)*1000)
		a.WriteString(line)
		// The predicate below, by hand: NULL amounts are not kept.
		if amount != "null" && (region == "eu" || region == "us") && i%17*10 > 50 {
			k.WriteString(line)
		} else {
			dropped++
		}
	}
	return a.String(), k.String(), dropped
}

const whereJob = `
name: where
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
%s
key: [user]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}, {name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`

// TestWhere: a job's where keeps the records for which it is true (NULL
// is not), exactly as if the others had never been in the input (the
// records are in order, so the watermark they moved changes no window,
// only the watermark the firings report);
// the summary counts the dropped ones in filtered and conservation
// counts them; a run that crashes and resumes from a checkpoint ends
// with the same results and summary, filtered included.
func TestWhere(t *testing.T) {
	all, kept, dropped := whereInput()
	job := fmt.Sprintf(whereJob, `where: "region IN ('eu', 'us') AND amount > 50"`)
	dir, sum := runSpec(t, job, map[string]string{"in.jsonl": all}, RunOptions{Deterministic: true})
	refDir, ref := runSpec(t, fmt.Sprintf(whereJob, ""), map[string]string{"in.jsonl": kept}, RunOptions{Deterministic: true})
	// The watermark at each firing differs: the dropped records moved it.
	noWM := regexp.MustCompile(`"watermark":\d+,`)
	if got, want := noWM.ReplaceAll(readOut(t, dir), nil), noWM.ReplaceAll(readOut(t, refDir), nil); !bytes.Equal(got, want) {
		t.Errorf("results of the where:\n%s\nwant those of its records alone:\n%s", got, want)
	}
	if sum.Get("filtered") != int64(dropped) || sum.Get("records_in") != 400 || sum.Get("accepted") != ref.Get("accepted") {
		t.Errorf("summary %s: want filtered %d of 400, accepted %d", sum.JSON(), dropped, ref.Get("accepted"))
	}
	if ref.Has("filtered") {
		t.Errorf("a job without where counts filtered: %s", ref.JSON())
	}

	// Crash after the third checkpoint, resume.
	ck := t.TempDir()
	for _, f := range []string{"in.jsonl"} {
		if err := os.WriteFile(filepath.Join(ck, f), []byte(all), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		hits := 0
		o := RunOptions{Dir: ck, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(ck, "ck"),
			CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(),
			Crash: func(p string) {
				if p == "after-manifest" && attempt == 0 {
					if hits++; hits == 3 {
						panic("crash at " + p)
					}
				}
			}}
		j, err := Open(s, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.Run(context.Background())
		if attempt == 0 {
			if err == nil {
				t.Fatal("the crash hook never fired")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.JSON(), sum.JSON()) || !bytes.Equal(readOut(t, ck), readOut(t, dir)) {
			t.Errorf("after a crash and resume: %s\nwant %s", got.JSON(), sum.JSON())
		}
	}
}

// TestWhereRefused: a where that does not compile is refused with its
// column and a hint.
func TestWhereRefused(t *testing.T) {
	_, err := spec.Parse([]byte(fmt.Sprintf(whereJob, `where: "MODE(amount, 2) = 0"`)))
	if err == nil || !strings.Contains(err.Error(), `where: column 1: function MODE is not supported in weir's expressions; did you mean "MOD"?`) {
		t.Errorf("got %v", err)
	}
}

// TestComputed: computed fields, in order, over nested fields, key the
// windows, time them and feed their aggregates exactly as the same
// fields given flat in the records; a later computed field of a name
// replaces the record's field from there on, and where sees it.
func TestComputed(t *testing.T) {
	var nested, flat strings.Builder
	for i := range 300 {
		ms := 1767225600000 + int64(i)*700
		fmt.Fprintf(&nested, `{"kind":%d,"bid":{"bidder":%d,"price":%d,"ms":%d},"other":{"s":%d}}`+"\n", i%3, i%4, i%9*10, ms, ms/1000)
		if i%3 == 2 {
			fmt.Fprintf(&flat, `{"bidder":%d,"price":%d,"ts":%d}`+"\n", i%4, i%9*10*2, ms)
		}
	}
	job := fmt.Sprintf(whereJob, `computed:
  - {name: ts, expr: "CASE WHEN kind = 2 THEN TO_TIMESTAMP_LTZ(bid.ms, 3) ELSE TO_TIMESTAMP_LTZ(other.s, 0) END"}
  - {name: keep, expr: "kind = 2"}
  - {name: bidder, expr: bid.bidder}
  - {name: price, expr: "bid.price * 2"}
  - {name: kind, expr: "'bid'"}
where: "keep AND kind = 'bid'"`)
	flatJob := fmt.Sprintf(whereJob, "")
	for _, j := range []*string{&job, &flatJob} {
		*j = strings.NewReplacer("key: [user]", "key: [bidder]", "field: amount", "field: price").Replace(*j)
	}
	dir, sum := runSpec(t, job, map[string]string{"in.jsonl": nested.String()}, RunOptions{Deterministic: true})
	refDir, ref := runSpec(t, flatJob, map[string]string{"in.jsonl": flat.String()}, RunOptions{Deterministic: true})
	noWM := regexp.MustCompile(`"watermark":\d+,`)
	if got, want := noWM.ReplaceAll(readOut(t, dir), nil), noWM.ReplaceAll(readOut(t, refDir), nil); !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("results of the computed fields:\n%s\nwant the flat records':\n%s", got, want)
	}
	if sum.Get("filtered") != 200 || sum.Get("accepted") != ref.Get("accepted") {
		t.Errorf("summary %s, flat %s", sum.JSON(), ref.JSON())
	}
}
