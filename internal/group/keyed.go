package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/winop"
)

// The keyed changelog. A task's checkpoint is a set of items: each window
// operator snapshot cut into one item per window contents, merging set,
// pane and timer (winop.SplitSnapshot), and every other part of the
// checkpoint whole. Items fall into buckets by the hash of their id. A
// base writes the whole checkpoint (chunks and a header "h",
// changelog.go); every commit after it writes only the buckets whose
// items changed since the task's last commit, one record each (key
// "d/<buckets>/<bucket>", value every item of the bucket now), and a
// delta header "hd" naming the base and a checksum of the whole item set.
// Compaction keeps each key's newest record; a restore reads from the
// base's first record (the offset the commit's metadata names) to the
// checkpoint's header, replacing the base's buckets by the deltas' in
// order. A new base comes when the deltas written since the last one
// outgrow it (so a restore reads at most about twice the state), after
// rebaseEvery, at a task's end, and at a task's first commit on its
// member; it starts with a tombstone for every delta key written since
// the previous base, so the topic keeps about one base's worth of keys,
// and it sizes the buckets for the state it holds (bucketItems each).
//
// Finding what changed costs a pass over the checkpoint: every item
// hashed and added to its bucket's sum, compared with the last commit's
// sums (a flat array, not a map of items: on this machine a map lookup
// per item cost more than writing the whole checkpoint). Only the items
// of changed buckets are copied. Where one commit changes more than the
// base holds (the state churns faster than the commits come), the next
// commits write bases without that pass, twice as many each time it
// repeats (up to maxBackoff).
const (
	deltaPrefix    = "d/"
	deltaHeaderKey = "hd"
	// rebaseBytes: deltas of a small state rebase only past this many
	// bytes.
	rebaseBytes = 64 << 10
	// rebaseEvery bounds a base's age, far below the changelog's
	// delete.retention.ms (a day) that keeps the rebase's tombstones.
	rebaseEvery = 10 * time.Minute
	// bucketItems is the items per bucket a base aims at; minBuckets the
	// fewest buckets.
	bucketItems = 4
	minBuckets  = 64
	// maxBuckets bounds the bucket count (a restore allocates a slot per
	// bucket, whatever a record's key says).
	maxBuckets = 1 << 22
)

// fullCheckpoints makes every commit a base, as before the keyed
// changelog (BenchmarkGroupState and BenchmarkKeyedCommit compare the
// two).
var fullCheckpoints = false

// splitParts calls fn with each item of parts (in no order): a window
// operator snapshot's items under 'w', the part's name and the item's
// id; any other part whole under 'p' and its name. id aliases scratch
// space.
func splitParts(parts map[string][]byte, fn func(id, val []byte)) error {
	var id []byte
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		b := parts[name]
		if winop.IsSnapshot(b) {
			id = binary.AppendUvarint(append(id[:0], 'w'), uint64(len(name)))
			id = append(id, name...)
			n := len(id)
			if err := winop.SplitSnapshot(b, func(item, val []byte) {
				id = append(id[:n], item...)
				fn(id, val)
			}); err != nil {
				return fmt.Errorf("part %s: %w", name, err)
			}
			continue
		}
		fn(append(append(id[:0], 'p'), name...), b)
	}
	return nil
}

// joinParts puts items (by id, as splitParts gives them) together into
// a checkpoint's parts.
func joinParts(items func(yield func(id, val []byte) bool)) (map[string][]byte, error) {
	parts := map[string][]byte{}
	// The window operators' names, then each one's snapshot from its
	// items (a task has a few operators at most).
	names := map[string]bool{}
	var err error
	items(func(id, val []byte) bool {
		switch {
		case len(id) > 0 && id[0] == 'p':
			parts[string(id[1:])] = val
		case len(id) > 0 && id[0] == 'w':
			name, _, ok := itemName(id)
			if !ok {
				err = fmt.Errorf("bad item id %q", id)
				return false
			}
			names[string(name)] = true
		default:
			err = fmt.Errorf("bad item id %q", id)
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for name := range names {
		b, err := winop.JoinSnapshot(func(yield func(id, val []byte) bool) {
			items(func(id, val []byte) bool {
				if n, item, ok := itemName(id); ok && id[0] == 'w' && string(n) == name {
					return yield(item, val)
				}
				return true
			})
		})
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", name, err)
		}
		parts[name] = b
	}
	return parts, nil
}

// itemName cuts a window operator's item id ('w', the part's name, the
// operator's item id) into the name and the item id.
func itemName(id []byte) (name, item []byte, ok bool) {
	n, k := binary.Uvarint(id[1:])
	if k <= 0 || uint64(len(id)-1-k) < n {
		return nil, nil, false
	}
	return id[1+k : 1+k+int(n)], id[1+k+int(n):], true
}

// hashItem returns the hash of an item's id, which picks its bucket, and
// the item's hash, a checkpoint's checksum being the sum of its items'
// hashes (so that a bucket's sum and the checksum do not depend on the
// items' order).
func hashItem(id, val []byte) (idh, h uint64) {
	idh = xxhash.Sum64(id)
	return idh, bits.RotateLeft64(idh*0x9E3779B97F4A7C15+xxhash.Sum64(val), 31) * 0xC2B2AE3D27D4EB4F
}

// itemHash is an item's hash (hashItem's second).
func itemHash(id, val []byte) uint64 {
	_, h := hashItem(id, val)
	return h
}

// bytesOf is s's bytes, not copied: for reading only.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// bucketOf is the bucket of the item id among nb (a power of 2).
func bucketOf(id []byte, nb int) int { return int(xxhash.Sum64(id) & uint64(nb-1)) }

// bucketsFor is the bucket count of a base of n items.
func bucketsFor(n int) int {
	nb := minBuckets
	for nb*bucketItems < n && nb < maxBuckets {
		nb *= 2
	}
	return nb
}

// deltaKey is the changelog key of bucket b of nb.
func deltaKey(nb, b int) string { return deltaPrefix + strconv.Itoa(nb) + "/" + strconv.Itoa(b) }

// chain is where a committed checkpoint stands in its changelog
// partition: the base it is on (-1: unknown, a copy of an older weir's)
// and the delta keys written since that base.
type chain struct {
	base    int64
	written map[string]struct{}
}

// chainPart names a state directory copy's chain among its parts.
const chainPart = "\x00chain"

func (c chain) encode() []byte {
	b := binary.AppendVarint(nil, c.base)
	for _, k := range slices.Sorted(maps.Keys(c.written)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

func decodeChain(b []byte) chain {
	base, k := binary.Varint(b)
	if k <= 0 {
		return chain{base: -1}
	}
	c := chain{base: base, written: map[string]struct{}{}}
	for b = b[k:]; len(b) > 0; {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return chain{base: -1}
		}
		c.written[string(b[k:k+int(n)])] = struct{}{}
		b = b[k+int(n):]
	}
	return c
}

// keyed is a task's side of the keyed changelog: its last committed
// checkpoint's bucket sums and the base the deltas since are on. Owned by
// the member's loop.
type keyed struct {
	// sums are each bucket's sum of item hashes (its length is the
	// bucket count); spare is the array the next commit sums into, where
	// the bucket of each of its items (scratch space).
	sums, spare []uint64
	where       []int32
	// based: the deltas since base, the id of the base checkpoint, are
	// on it (false: the next commit writes a base); baseAt is the
	// changelog offset of its first record, baseSize its bytes, baseTime
	// when it was written.
	based    bool
	base     int64
	baseAt   int64
	baseSize int
	baseTime time.Time
	// since is the bytes of deltas written since the base; written their
	// keys (each tombstoned by the next base).
	since   int
	written map[string]struct{}
	// onBase is the base the last committed checkpoint is on (itself, for
	// a base; -1: unknown), for the state directory's copy.
	onBase int64
	// skip is the commits that write bases without looking for changes
	// (the state churned); backoff how many the last churn skipped.
	skip, backoff int
}

// Why a base is written without its items (commitBase's serr): the
// state churned faster than the commits came (errChurn: the next commits
// skip looking for changes), a commit skipping (errSkip), or every commit
// written whole (errFull: fullCheckpoints).
var (
	errChurn = errors.New("the state churns")
	errSkip  = errors.New("skipping after a churn")
	errFull  = errors.New("full checkpoints")
)

// maxBackoff bounds keyed.backoff.
const maxBackoff = 64

// chain is the chain of the task's last committed checkpoint.
func (k *keyed) chain() chain { return chain{base: k.onBase, written: k.written} }

// restored is the keyed side of a task restored from a checkpoint on
// chain c: its first commit writes a base, which tombstones c's delta
// keys.
func restored(c chain) *keyed { return &keyed{written: c.written, onBase: c.base} }

// keyedCommit is what one checkpoint of a task writes to its changelog
// partition, and how the task's keyed side changes once it commits.
type keyedCommit struct {
	recs []*kgo.Record
	// first is a base's first record (its offset is the restore's start);
	// nil for a delta, whose restore starts at its base's.
	first *kgo.Record
	hdr   *kgo.Record
	base  bool
	apply func()
}

// at is the changelog offset a restore of the checkpoint reads from,
// once its records were produced.
func (c keyedCommit) at(k *keyed) int64 {
	if c.first != nil {
		return c.first.Offset
	}
	return k.baseAt
}

// sumBuckets sums the hashes of parts' items into nb buckets (reusing
// into), and gives each item's bucket in the order splitParts gives
// them (reusing where) and the count of items.
func sumBuckets(parts map[string][]byte, nb int, into []uint64, where []int32) ([]uint64, []int32, error) {
	sums := slices.Grow(into[:0], nb)[:nb]
	clear(sums)
	where = where[:0]
	err := splitParts(parts, func(id, val []byte) {
		idh, h := hashItem(id, val)
		b := idh & uint64(nb-1)
		sums[b] += h
		where = append(where, int32(b))
	})
	return sums, where, err
}

// commit returns the changelog records of checkpoint s of the task whose
// partition p of topic is: a base, or the buckets whose items changed
// since the task's last commit. Its apply makes the checkpoint the last
// one, after the transaction committed (an aborted one leaves k as it
// was).
func (k *keyed) commit(topic string, p int32, s *snapshot, now time.Time) keyedCommit {
	if fullCheckpoints {
		return k.commitBase(topic, p, s, now, nil, errFull)
	}
	if k.skip > 0 {
		return k.commitBase(topic, p, s, now, nil, errSkip)
	}
	nb := len(k.sums)
	if !k.based || s.Done || now.Sub(k.baseTime) >= rebaseEvery {
		return k.commitBase(topic, p, s, now, nil, nil)
	}
	sums, where, err := sumBuckets(s.Parts, nb, k.spare, k.where)
	k.where = where
	n := len(where)
	if err != nil {
		return k.commitBase(topic, p, s, now, nil, err)
	}
	var dirty []int
	for b := range nb {
		if sums[b] != k.sums[b] {
			dirty = append(dirty, b)
		}
	}
	// The changed buckets' items, then a record per bucket.
	bufs := make([][]byte, len(dirty))
	if len(dirty) > 0 {
		// at is each bucket's index in dirty (-1: unchanged).
		at := make([]int32, nb)
		for i := range at {
			at[i] = -1
		}
		for i, b := range dirty {
			at[b] = int32(i)
			bufs[i] = []byte{0} // a version byte
		}
		item := 0
		_ = splitParts(s.Parts, func(id, val []byte) {
			i := at[where[item]]
			item++
			if i >= 0 {
				buf := binary.AppendUvarint(bufs[i], uint64(len(id)))
				buf = append(buf, id...)
				buf = binary.AppendUvarint(buf, uint64(len(val)))
				bufs[i] = append(buf, val...)
			}
		})
	}
	var recs []*kgo.Record
	deltaBytes := 0
	for i, b := range dirty {
		if len(bufs[i]) > chunkSize {
			// A bucket too large for one record (an item of a large
			// distinct set or session): the checkpoint goes whole, in
			// chunks, as a base.
			return k.commitBase(topic, p, s, now, sums, nil)
		}
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(deltaKey(nb, b)), Value: bufs[i]}
		recs = append(recs, r)
		deltaBytes += len(r.Key) + len(r.Value)
	}
	if deltaBytes > max(k.baseSize, rebaseBytes) {
		// One commit changed more than the base holds: the state
		// churns faster than the commits come; the next commits write
		// bases without looking for changes, more of them each time
		// this repeats.
		return k.commitBase(topic, p, s, now, nil, errChurn)
	}
	if k.since+deltaBytes > max(k.baseSize, rebaseBytes) || bucketsFor(n) > 2*nb {
		return k.commitBase(topic, p, s, now, sums, nil)
	}
	var sum uint64
	for _, v := range sums {
		sum += v
	}
	h := &kgo.Record{Topic: topic, Partition: p, Key: []byte(deltaHeaderKey), Value: appendDeltaHeader(nil, s, k.base, sum)}
	deltaBytes += len(h.Key) + len(h.Value)
	return keyedCommit{recs: append(recs, h), hdr: h, apply: func() {
		k.sums, k.spare = sums, k.sums
		k.backoff = 0
		k.since += deltaBytes
		if k.written == nil {
			k.written = map[string]struct{}{}
		}
		for _, b := range dirty {
			k.written[deltaKey(nb, b)[len(deltaPrefix):]] = struct{}{}
		}
	}}
}

// commitBase is commit's base: the tombstones of the previous base's
// delta keys, then the checkpoint whole. Its apply makes it the base, its
// buckets sized for its items (sums, when of that size, are theirs); a
// checkpoint that could not be cut into items, or written without them
// (serr), leaves the task without a base, so its next commit writes one
// too; errChurn and errSkip count the commits that skip looking for
// changes.
func (k *keyed) commitBase(topic string, p int32, s *snapshot, now time.Time, sums []uint64, serr error) keyedCommit {
	var recs []*kgo.Record
	for _, key := range slices.Sorted(maps.Keys(k.written)) {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(deltaPrefix + key)})
	}
	cp := changelogRecords(topic, p, s)
	size := 0
	for _, r := range cp {
		size += len(r.Key) + len(r.Value)
	}
	if serr == nil && !s.Done {
		// The buckets for the base's items.
		n := 0
		if sums == nil {
			sums, k.where, serr = sumBuckets(s.Parts, max(len(k.sums), minBuckets), k.spare, k.where)
			n = len(k.where)
		} else {
			n = len(k.where) // commit's sums
		}
		if nb := bucketsFor(n); serr == nil && nb != len(sums) {
			sums, k.where, serr = sumBuckets(s.Parts, nb, nil, k.where)
		}
	}
	c := keyedCommit{recs: append(recs, cp...), first: cp[0], hdr: cp[len(cp)-1], base: true}
	c.apply = func() {
		if serr != nil || s.Done {
			k.sums, k.based = nil, false
		} else {
			k.sums, k.spare, k.based, k.base = sums, nil, true, s.ID
		}
		k.baseAt, k.baseSize, k.baseTime, k.since, k.written, k.onBase = c.first.Offset, size, now, 0, nil, s.ID
		switch serr {
		case errChurn:
			k.backoff = min(max(2*k.backoff, 1), maxBackoff)
			k.skip = k.backoff
		case errSkip:
			k.skip--
		}
	}
	return c
}

// appendDeltaHeader is a delta header's value: the checkpoint id, its
// base's id, the checksum of its items, done, position. Not the meta (the
// spec's fingerprint, a kilobyte or two): a chain's checkpoints are of
// one spec, whose meta the base's header holds.
func appendDeltaHeader(b []byte, s *snapshot, base int64, sum uint64) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.ID))
	b = binary.BigEndian.AppendUint64(b, uint64(base))
	b = binary.BigEndian.AppendUint64(b, sum)
	return appendHeaderTail(b, &snapshot{Done: s.Done, Position: s.Position})
}

type deltaHeader struct {
	id, base int64
	sum      uint64
	done     bool
	position int64
}

func parseDeltaHeader(v []byte) (deltaHeader, error) {
	if len(v) < 33 {
		return deltaHeader{}, errors.New("short changelog delta header")
	}
	return deltaHeader{id: int64(binary.BigEndian.Uint64(v)), base: int64(binary.BigEndian.Uint64(v[8:])), sum: binary.BigEndian.Uint64(v[16:]),
		done: v[24] == 1, position: int64(binary.BigEndian.Uint64(v[25:]))}, nil
}

// rebuild is a restore's view of the keyed changelog as it reads it in
// order: the items of the last base read and the deltas after it. A
// delta replaces its bucket whole, so the items are the base's, less
// those of the buckets a delta replaced, plus the newest delta of each
// such bucket: no item is copied until the restore's end.
type rebuild struct {
	// parts are the base's parts (or a copy's: a checkpoint on the
	// base), read item by item (splitParts); nil: no base read. After a
	// delta of another bucket count, items holds them instead.
	parts map[string][]byte
	items map[string][]byte
	// base is the id of the base the items are on.
	base int64
	// nb is the bucket count of the deltas read since the base (0: none),
	// over the items of each bucket a delta replaced, by bucket.
	nb   int
	over map[int]map[string][]byte
	// meta is the base's meta, which its deltas' checkpoints have.
	meta []byte
	// written are the delta keys read since the base.
	written map[string]struct{}
	// bad: a delta record was malformed (the restore fails its checksum).
	bad bool
}

// startFrom makes s, a checkpoint on chain c, the rebuild's start (a
// copy from the state directory).
func (b *rebuild) startFrom(s *snapshot, c chain) error {
	if err := splitParts(s.Parts, func(_, _ []byte) {}); err != nil {
		return err
	}
	*b = rebuild{parts: s.Parts, base: c.base, written: maps.Clone(c.written), meta: s.Meta}
	return nil
}

// chain is the chain of the checkpoint the rebuild read last.
func (b *rebuild) chain() chain { return chain{base: b.base, written: b.written} }

// onBase takes the parts of base checkpoint id, read whole, and its meta.
func (b *rebuild) onBase(id int64, parts map[string][]byte, meta []byte) {
	*b = rebuild{parts: parts, base: id, meta: meta}
}

// based reports whether the rebuild has a base to apply deltas to.
func (b *rebuild) based() bool { return b.parts != nil || b.items != nil }

// each calls fn with the current items (in no order), once each, until
// fn returns false; the id is fn's to read during the call only.
func (b *rebuild) each(fn func(id, val []byte) bool) error {
	replaced := func(id []byte) bool { return len(b.over) > 0 && b.over[bucketOf(id, b.nb)] != nil }
	more := true
	if b.items != nil {
		for id, val := range b.items {
			if more && !replaced(bytesOf(id)) {
				more = fn(bytesOf(id), val)
			}
		}
	} else if err := splitParts(b.parts, func(id, val []byte) {
		if more && !replaced(id) {
			more = fn(id, val)
		}
	}); err != nil {
		return err
	}
	for _, m := range b.over {
		for id, val := range m {
			if more {
				more = fn(bytesOf(id), val)
			}
		}
	}
	return nil
}

// fold applies the deltas read to the items (when a delta of another
// bucket count comes).
func (b *rebuild) fold() {
	items := map[string][]byte{}
	if b.each(func(id, val []byte) bool { items[string(id)] = val; return true }) != nil {
		b.bad = true
	}
	b.parts, b.items, b.nb, b.over = nil, items, 0, nil
}

// onDelta applies a delta record (key without its prefix).
func (b *rebuild) onDelta(key string, v []byte) {
	if len(v) == 0 {
		return // a base's tombstone of an older delta key
	}
	if b.written == nil {
		b.written = map[string]struct{}{}
	}
	b.written[key] = struct{}{}
	if !b.based() {
		return
	}
	ns, bs, ok := strings.Cut(key, "/")
	nb, err1 := strconv.Atoi(ns)
	bk, err2 := strconv.Atoi(bs)
	if !ok || err1 != nil || err2 != nil || nb <= 0 || nb > maxBuckets || nb&(nb-1) != 0 || bk < 0 || bk >= nb || v[0] != 0 {
		b.bad = true
		return
	}
	if b.nb != nb {
		if b.nb != 0 {
			b.fold()
		}
		b.nb, b.over = nb, map[int]map[string][]byte{}
	}
	m := map[string][]byte{}
	for r := v[1:]; len(r) > 0; {
		id, rest, ok1 := cutBytes(r)
		val, rest, ok2 := cutBytes(rest)
		if !ok1 || !ok2 || bucketOf(id, nb) != bk {
			b.bad = true
			return
		}
		m[string(id)] = val
		r = rest
	}
	b.over[bk] = m
}

// cutBytes cuts a uvarint-length-prefixed byte string off the front of b.
func cutBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// finish returns the parts of the delta checkpoint h names, checked
// against its checksum.
func (b *rebuild) finish(h deltaHeader) (map[string][]byte, error) {
	if !b.based() || b.base != h.base {
		return nil, fmt.Errorf("checkpoint %d is a delta on base %d, which the read did not start from", h.id, h.base)
	}
	var sum uint64
	if err := b.each(func(id, val []byte) bool { sum += itemHash(id, val); return true }); err != nil || b.bad || sum != h.sum {
		return nil, fmt.Errorf("checkpoint %d fails its checksum", h.id)
	}
	return joinParts(func(fn func(id, val []byte) bool) { _ = b.each(fn) })
}
