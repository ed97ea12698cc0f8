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

// TestPropertyLastRevisionWins writes random revisions of random (key,
// window) pairs, with increasing panes per window, in a shuffled order with
// duplicates, and checks that the table holds each window's last revision,
// minus the windows retracted at a pane not older than their last pane.
//
// A retraction is a delete, not a tombstone, so each window's retractions
// come after all of its revisions in the written order (as the engine emits
// them); otherwise windows interleave freely.
func TestPropertyLastRevisionWins(t *testing.T) {
	dir := t.TempDir()
	run := 0
	keys := []string{"name", "n"}
	rapid.Check(t, func(rt *rapid.T) {
		run++
		path := filepath.Join(dir, strconv.Itoa(run)+".db")

		type window struct {
			name        string
			n           int
			start, end  etime.Time
			revs        []Row
			retractPane int64 // -1: not retracted
		}
		var windows []*window
		seen := map[string]bool{}
		nWindows := rapid.IntRange(1, 12).Draw(rt, "windows")
		for range nWindows {
			w := &window{
				name: rapid.SampledFrom([]string{"a", "b", `"q"`, ""}).Draw(rt, "name"),
				n:    rapid.IntRange(-2, 2).Draw(rt, "n"),
			}
			if rapid.IntRange(0, 5).Draw(rt, "global") == 0 {
				w.start, w.end = etime.MinTime, etime.MaxTime
			} else {
				w.start = etime.Time(rapid.IntRange(0, 3).Draw(rt, "start") * 10)
				w.end = w.start + etime.Time(rapid.IntRange(1, 2).Draw(rt, "size")*10)
			}
			id := fmt.Sprint(w.name, w.n, w.start, w.end)
			if seen[id] {
				continue
			}
			seen[id] = true
			k := []string{"name", strconv.Quote(w.name), "n", strconv.Itoa(w.n)}
			pane := int64(0)
			for i := range rapid.IntRange(1, 5).Draw(rt, "revisions") {
				pane += int64(rapid.IntRange(0, 2).Draw(rt, "gap"))
				firing := "late"
				if i == 0 {
					firing = rapid.SampledFrom([]string{"early", "on_time"}).Draw(rt, "firing")
				}
				v := rapid.SampledFrom([]string{"1", "-7", "2.5", `"s"`, "null", "true", `[1,{"x":2}]`}).Draw(rt, "value")
				w.revs = append(w.revs, row(k, w.start, w.end, firing, pane, w.end+etime.Time(pane), "v", v))
				pane++
			}
			w.retractPane = -1
			if rapid.Bool().Draw(rt, "retract") {
				last := w.revs[len(w.revs)-1].Pane
				w.retractPane = rapid.Int64Range(max(0, last-2), last+1).Draw(rt, "retractPane")
			}
			windows = append(windows, w)
		}

		// Revisions with duplicates, shuffled.
		var stream []Row
		for _, w := range windows {
			for _, r := range w.revs {
				for range rapid.IntRange(1, 3).Draw(rt, "copies") {
					stream = append(stream, r)
				}
			}
		}
		stream = permute(rt, stream)
		// Each retraction (possibly duplicated) at a random place after the
		// window's last revision.
		for _, w := range windows {
			if w.retractPane < 0 {
				continue
			}
			k := w.revs[0].Keys
			last := 0
			for i, r := range stream {
				if slices.EqualFunc(r.Keys, k, func(a, b Column) bool { return string(a.Value) == string(b.Value) }) && r.Start == w.start && r.End == w.end {
					last = i
				}
			}
			for range rapid.IntRange(1, 2).Draw(rt, "retractCopies") {
				at := rapid.IntRange(last+1, len(stream)).Draw(rt, "retractAt")
				ret := Row{Keys: k, Start: w.start, End: w.end, Firing: "retract", Pane: w.retractPane, Watermark: 99}
				stream = slices.Insert(stream, at, ret)
			}
		}

		s, err := Open(path, keys, []string{"v"}, Options{BatchRows: rapid.IntRange(1, 20).Draw(rt, "batch")})
		if err != nil {
			rt.Fatal(err)
		}
		for _, r := range stream {
			if err := s.Write(r); err != nil {
				s.Close()
				rt.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			rt.Fatal(err)
		}

		// The model: each window's last revision unless retracted at a pane
		// not older than it, in table order.
		model, err := Open(filepath.Join(dir, strconv.Itoa(run)+"-model.db"), keys, []string{"v"}, Options{})
		if err != nil {
			rt.Fatal(err)
		}
		for _, w := range windows {
			last := w.revs[len(w.revs)-1]
			if w.retractPane >= last.Pane {
				continue
			}
			if err := model.Write(last); err != nil {
				model.Close()
				rt.Fatal(err)
			}
		}
		if err := model.Close(); err != nil {
			rt.Fatal(err)
		}
		got, want := dump(rt, path, "results", keys), dump(rt, model.Path(), "results", keys)
		if got != want {
			rt.Fatalf("table:\n%s\nwant:\n%s", got, want)
		}
	})
}

// permute returns a random permutation of rows.
func permute(rt *rapid.T, rows []Row) []Row {
	out := slices.Clone(rows)
	for i := len(out) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(rt, "swap")
		out[i], out[j] = out[j], out[i]
	}
	return out
}
