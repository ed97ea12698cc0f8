package weir

// Sum returns the aggregate function that adds up f(v) over a window's
// elements, as an int64 accumulator (incremental, mergeable, E1).
func Sum[T any](f func(T) int64) AggregateFunc[T, int64, int64] { return sumBy[T]{f} }

type sumBy[T any] struct{ f func(T) int64 }

func (sumBy[T]) CreateAccumulator() int64   { return 0 }
func (s sumBy[T]) Add(acc int64, v T) int64 { return acc + s.f(v) }
func (sumBy[T]) Merge(a, b int64) int64     { return a + b }
func (sumBy[T]) Result(acc int64) int64     { return acc }
