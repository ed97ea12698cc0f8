package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// BenchmarkCommit writes and commits checkpoints of 8 parts of 1 MiB each,
// written concurrently as 8 subtasks would, with the default retention
// (so each commit also prunes one checkpoint). Throughput counts part
// bytes; every part, the manifest and the directories are fsynced.
func BenchmarkCommit(b *testing.B) {
	const parts, partSize = 8, 1 << 20
	s := mustOpen(b, b.TempDir(), Options{})
	rng := rand.New(rand.NewPCG(1, 1))
	data := make([][]byte, parts)
	names := make([]string, parts)
	for i := range data {
		data[i] = make([]byte, partSize)
		for j := range data[i] {
			data[i][j] = byte(rng.Uint32())
		}
		names[i] = fmt.Sprintf("window/%d", i)
	}
	meta := []byte("spec=0123456789abcdef records=1000000")
	b.SetBytes(parts * partSize)
	var id int64
	for b.Loop() {
		id++
		p, err := s.Begin(id)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range parts {
			wg.Go(func() {
				if err := p.WritePart(names[i], data[i]); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if err := commitMeta(p, meta); err != nil {
			b.Fatal(err)
		}
	}
}
