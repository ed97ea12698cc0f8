// Package memstate is the in-memory state backend: live Go values in maps,
// no serialization on the hot path. State is lost when the process ends
// unless a checkpoint captured it.
package memstate

import "github.com/weirstream/weir/state"

// Backend is the in-memory backend. Create one per operator instance.
type Backend struct {
	state.Heap
}

// New returns an empty in-memory backend.
func New() *Backend { return &Backend{} }

// Name returns "memory".
func (*Backend) Name() string { return "memory" }

// Close is a no-op; it is idempotent.
func (*Backend) Close() error { return nil }

var _ state.HeapBackend = (*Backend)(nil)
