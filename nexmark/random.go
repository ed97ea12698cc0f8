package nexmark

import "math"

// javaRandom is java.util.Random: a 48-bit linear congruential generator.
// Beam's generator seeds one with each event id, so a bit-exact port gives
// Beam's events.
type javaRandom struct{ seed int64 }

const (
	lcgMul  = 0x5DEECE66D
	lcgAdd  = 0xB
	lcgMask = 1<<48 - 1
)

func newJavaRandom(seed int64) javaRandom { return javaRandom{(seed ^ lcgMul) & lcgMask} }

// next returns the top bits of the next state, as Java's next(bits).
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*lcgMul + lcgAdd) & lcgMask
	return int32(r.seed >> (48 - bits))
}

// nextInt is Java's nextInt().
func (r *javaRandom) nextInt() int32 { return r.next(32) }

// nextIntn is Java's nextInt(bound), bound > 0: a power of two takes the
// high bits, other bounds reject the values of the last incomplete range.
func (r *javaRandom) nextIntn(bound int32) int32 {
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(v)) >> 31)
	}
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 { // int32 overflow means u was in the last range
			return v
		}
	}
}

// nextLong is Java's nextLong().
func (r *javaRandom) nextLong() int64 {
	hi := int64(r.next(32))
	return hi<<32 + int64(r.next(32))
}

// nextDouble is Java's nextDouble(): 53 random bits in [0, 1).
func (r *javaRandom) nextDouble() float64 {
	hi := int64(r.next(26))
	return float64(hi<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// nextLongn is Beam's LongGenerator.nextLong: nextInt(n) for n below
// 2^31-1, else |nextLong() % n| (skewed, as Beam's).
func (r *javaRandom) nextLongn(n int64) int64 {
	if n < math.MaxInt32 {
		return int64(r.nextIntn(int32(n)))
	}
	v := r.nextLong() % n
	if v < 0 {
		v = -v
	}
	return v
}

// javaRound is Java's Math.round for the non-negative values the
// generator rounds: half up, which math.Round also does there.
func javaRound(x float64) int64 { return int64(math.Round(x)) }
