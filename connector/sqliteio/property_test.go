package sqliteio

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/weirstream/weir/etime"
	"pgregory.net/rapid"
)

// TestPropertyLastRevisionWins writes random revisions of random (job,
// key, window) triples, with increasing (run, pane) per window (a new run
// may restart at a lower pane), in a shuffled order with duplicates, from
// two sinks of different jobs sharing the table, and checks that the table
// holds each window's last revision, minus the windows retracted at a
// (run, pane) not older than their last one.
//
// A retraction is a delete, not a tombstone, so each window's retractions
// come after all of its revisions in the written order (as the engine emits
// them); otherwise windows interleave freely.
func TestPropertyLastRevisionWins(t *testing.T) {
	dir := t.TempDir()
	iter := 0
	keys := []string{"name", "n"}
	jobs := []string{"", `j"1`}
	rapid.Check(t, func(rt *rapid.T) {
		iter++
		path := filepath.Join(dir, strconv.Itoa(iter)+".db")

		type window struct {
			job         string
			name        string
			n           int
			start, end  etime.Time
			revs        []Row
			retracted   bool  // whether a retraction is written
			retractRun  int64 // the retraction's (run, pane)
			retractPane int64
		}
		// A revision or retraction, and the job that writes it.
		type write struct {
			job string
			r   Row
		}
		var windows []*window
		seen := map[string]bool{}
		nWindows := rapid.IntRange(1, 12).Draw(rt, "windows")
		for range nWindows {
			w := &window{
				job:  rapid.SampledFrom(jobs).Draw(rt, "job"),
				name: rapid.SampledFrom([]string{"a", "b", `"q"`, ""}).Draw(rt, "name"),
				n:    rapid.IntRange(-2, 2).Draw(rt, "n"),
			}
			if rapid.IntRange(0, 5).Draw(rt, "global") == 0 {
				w.start, w.end = etime.MinTime, etime.MaxTime
			} else {
				w.start = etime.Time(rapid.IntRange(0, 3).Draw(rt, "start") * 10)
				w.end = w.start + etime.Time(rapid.IntRange(1, 2).Draw(rt, "size")*10)
			}
			if len(windows) > 0 && rapid.IntRange(0, 2).Draw(rt, "twin") == 0 {
				// The key and window of an earlier window, in the other
				// job: jobs must not touch each other's rows.
				o := rapid.SampledFrom(windows).Draw(rt, "twinOf")
				w.name, w.n, w.start, w.end = o.name, o.n, o.start, o.end
				w.job = jobs[0]
				if o.job == jobs[0] {
					w.job = jobs[1]
				}
			}
			id := fmt.Sprint(w.job, w.name, w.n, w.start, w.end)
			if seen[id] {
				continue
			}
			seen[id] = true
			k := []string{"name", strconv.Quote(w.name), "n", strconv.Itoa(w.n)}
			run := rapid.Int64Range(0, 2).Draw(rt, "firstRun")
			pane := int64(0)
			for i := range rapid.IntRange(1, 6).Draw(rt, "revisions") {
				if i > 0 && rapid.IntRange(0, 2).Draw(rt, "newRun") == 0 {
					// A later run starts the window again, at a pane
					// that may be lower than the earlier run's.
					run += rapid.Int64Range(1, 2).Draw(rt, "runGap")
					pane = rapid.Int64Range(0, 1).Draw(rt, "runPane")
				} else {
					pane += int64(rapid.IntRange(0, 2).Draw(rt, "gap"))
				}
				firing := "late"
				if i == 0 {
					firing = rapid.SampledFrom([]string{"early", "on_time"}).Draw(rt, "firing")
				}
				v := rapid.SampledFrom([]string{"1", "-7", "2.5", `"s"`, "null", "true", `[1,{"x":2}]`}).Draw(rt, "value")
				w.revs = append(w.revs, inRun(run, row(k, w.start, w.end, firing, pane, w.end+etime.Time(pane), "v", v)))
				pane++
			}
			if rapid.Bool().Draw(rt, "retract") {
				last := w.revs[len(w.revs)-1]
				w.retracted = true
				w.retractRun = rapid.Int64Range(max(0, last.Run-1), last.Run+1).Draw(rt, "retractRun")
				w.retractPane = rapid.Int64Range(max(0, last.Pane-2), last.Pane+1).Draw(rt, "retractPane")
			}
			windows = append(windows, w)
		}

		// Revisions with duplicates, shuffled.
		var stream []write
		for _, w := range windows {
			for _, r := range w.revs {
				for range rapid.IntRange(1, 3).Draw(rt, "copies") {
					stream = append(stream, write{w.job, r})
				}
			}
		}
		stream = permute(rt, stream)
		// Each retraction (possibly duplicated) at a random place after the
		// window's last revision.
		for _, w := range windows {
			if !w.retracted {
				continue
			}
			k := w.revs[0].Keys
			last := 0
			for i, x := range stream {
				if x.job == w.job && slices.EqualFunc(x.r.Keys, k, func(a, b Column) bool { return string(a.Value) == string(b.Value) }) && x.r.Start == w.start && x.r.End == w.end {
					last = i
				}
			}
			for range rapid.IntRange(1, 2).Draw(rt, "retractCopies") {
				at := rapid.IntRange(last+1, len(stream)).Draw(rt, "retractAt")
				ret := Row{Keys: k, Start: w.start, End: w.end, Firing: "retract", Run: w.retractRun, Pane: w.retractPane, Watermark: 99}
				stream = slices.Insert(stream, at, write{w.job, ret})
			}
		}

		// One sink per job on the same table, each with its own batch
		// size. They share the file's write lock, so a sink commits its
		// open batch before the other writes.
		sinks := map[string]*Sink{}
		closeAll := func() error {
			var err error
			for _, s := range sinks {
				if cerr := s.Close(); err == nil {
					err = cerr
				}
			}
			return err
		}
		for _, job := range jobs {
			s, err := Open(path, keys, []string{"v"}, Options{Job: job, BatchRows: rapid.IntRange(1, 20).Draw(rt, "batch")})
			if err != nil {
				closeAll()
				rt.Fatal(err)
			}
			sinks[job] = s
		}
		var cur *Sink
		for _, x := range stream {
			s := sinks[x.job]
			if cur != nil && cur != s {
				if err := cur.Flush(ctx); err != nil {
					closeAll()
					rt.Fatal(err)
				}
			}
			cur = s
			if err := s.Write(ctx, []Row{x.r}); err != nil {
				closeAll()
				rt.Fatal(err)
			}
		}
		if err := closeAll(); err != nil {
			rt.Fatal(err)
		}

		// The model: each window's last revision unless retracted at a
		// (run, pane) not older than it, in table order.
		modelPath := filepath.Join(dir, strconv.Itoa(iter)+"-model.db")
		for _, job := range jobs {
			model, err := Open(modelPath, keys, []string{"v"}, Options{Job: job})
			if err != nil {
				rt.Fatal(err)
			}
			for _, w := range windows {
				last := w.revs[len(w.revs)-1]
				if w.job != job || w.retracted && (w.retractRun > last.Run || w.retractRun == last.Run && w.retractPane >= last.Pane) {
					continue
				}
				if err := model.Write(ctx, []Row{last}); err != nil {
					model.Close()
					rt.Fatal(err)
				}
			}
			if err := model.Close(); err != nil {
				rt.Fatal(err)
			}
		}
		got, want := dump(rt, path, "results", keys), dump(rt, modelPath, "results", keys)
		if got != want {
			rt.Fatalf("table:\n%s\nwant:\n%s", got, want)
		}
	})
}

// permute returns a random permutation of rows.
func permute[T any](rt *rapid.T, rows []T) []T {
	out := slices.Clone(rows)
	for i := len(out) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(rt, "swap")
		out[i], out[j] = out[j], out[i]
	}
	return out
}
