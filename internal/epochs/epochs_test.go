package epochs

import (
	"slices"
	"testing"
)

// TestEpochs checks that Take returns exactly the items of the checkpoints
// it covers (oldest checkpoint first, then by subtask, each subtask's in
// order, across many chunks) and Rest the others.
func TestEpochs(t *testing.T) {
	e := New[int](false)
	a, b := Subtask{Stage: "w", Index: 0}, Subtask{Stage: "w", Index: 1}
	for i := range 10000 {
		e.Add(b, 100000+i)
		e.Add(a, i)
	}
	e.Barrier(a, 1)
	e.Add(a, -1) // after a's barrier: not in checkpoint 1
	e.Barrier(b, 1)
	e.Add(b, -2)
	var got []int
	e.Take(1, func(v *int) { got = append(got, *v) })
	var want []int
	for i := range 10000 {
		want = append(want, i)
	}
	for i := range 10000 {
		want = append(want, 100000+i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("take(1): %d items, want %d in order", len(got), len(want))
	}
	got = nil
	e.Take(2, func(v *int) { got = append(got, *v) })
	if len(got) != 0 {
		t.Fatalf("take(2) before any barrier of 2: %v", got)
	}
	e.Barrier(a, 2) // checkpoint 2 is then aborted; 3 covers it
	e.Add(a, -3)
	e.Barrier(a, 3)
	got = nil
	e.Take(3, func(v *int) { got = append(got, *v) })
	if !slices.Equal(got, []int{-1, -3}) {
		t.Fatalf("take(3) = %v, want [-1 -3]", got)
	}
	got = nil
	e.Rest(func(v *int) { got = append(got, *v) })
	if !slices.Equal(got, []int{-2}) {
		t.Fatalf("rest = %v, want [-2]", got)
	}
}

// TestAddPrompt: the first prompted item of a subtask's epoch asks once,
// with the last checkpoint whose barrier passed that subtask (-1 before
// any); plain items and later prompted ones of the epoch do not ask.
func TestAddPrompt(t *testing.T) {
	e := New[int](false)
	var asked []int64
	e.SetPrompt(func(after int64) { asked = append(asked, after) })
	a, b := Subtask{Stage: "w", Index: 0}, Subtask{Stage: "w", Index: 1}
	e.Add(a, 1)
	e.AddPrompt(a, 2)
	e.AddPrompt(a, 3)
	e.AddPrompt(b, 4)
	e.Barrier(a, 7)
	e.Add(a, 5)
	e.AddPrompt(b, 6) // b's epoch still before 7
	e.AddPrompt(a, 8)
	e.AddPrompt(a, 9)
	e.Barrier(a, 8) // an empty epoch of a
	e.AddPrompt(a, 10)
	if want := []int64{-1, -1, 7, 8}; !slices.Equal(asked, want) {
		t.Fatalf("asked after %v, want %v", asked, want)
	}
}
