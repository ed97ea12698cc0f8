package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/etime"
)

// A task's changelog partition (the task's partition number of the
// changelog topic) holds, per transaction of its owner, the task's
// checkpoint: a base, chunk records (key "c/<i>") and then a header
// record (key "h"), or a delta on the last base (keyed.go). Compaction
// keeps the newest of each key; a header names its checkpoint id and
// chunk count, and each chunk starts with the id, so a restore reads from
// the offset the group's committed offset names (its metadata: the
// base's first record) to the header of the id it names.

const (
	headerKey   = "h"
	chunkPrefix = "c/"
	// chunkSize keeps each record well under the brokers' default
	// message.max.bytes (1 MiB).
	chunkSize = 256 << 10
	// metaPrefix starts the metadata of the member's offset commits
	// (taskMeta): "weir <checkpoint id> at=<offset> wm=<ms>[ done]".
	metaPrefix = "weir "
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshot is one committed checkpoint of a task.
type snapshot struct {
	ID    int64
	Meta  []byte            // the spec's fingerprint (job.Fingerprint)
	Parts map[string][]byte // the checkpoint's parts by name
	// Done: the task read its input to the end (stop_at_end) and
	// committed its last output; it is not run again.
	Done bool
	// Position is the task's next input offset; Watermark its
	// partition's watermark, Idle whether the partition was idle (not
	// stored in the changelog header: they go in the offset's metadata).
	Position  int64
	Watermark etime.Time
	Idle      bool
}

// encodeParts frames the parts, sorted by name.
func encodeParts(parts map[string][]byte) []byte {
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(parts[name])))
		b = append(b, parts[name]...)
	}
	return b
}

func decodeParts(b []byte) (map[string][]byte, error) {
	parts := map[string][]byte{}
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errors.New("truncated parts")
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		name, err := next()
		if err != nil {
			return nil, err
		}
		data, err := next()
		if err != nil {
			return nil, err
		}
		parts[string(name)] = data
	}
	return parts, nil
}

// header is a header record's value: id, chunks, CRC-32C of the parts,
// done, position, meta.
func appendHeader(b []byte, s *snapshot, chunks int, crc uint32) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.ID))
	b = binary.BigEndian.AppendUint32(b, uint32(chunks))
	b = binary.BigEndian.AppendUint32(b, crc)
	return appendHeaderTail(b, s)
}

// appendHeaderTail ends both kinds of header: done, position, meta.
func appendHeaderTail(b []byte, s *snapshot) []byte {
	done := byte(0)
	if s.Done {
		done = 1
	}
	b = append(b, done)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Position))
	return append(b, s.Meta...)
}

type header struct {
	id       int64
	chunks   int
	crc      uint32
	done     bool
	position int64
	meta     []byte
}

func parseHeader(v []byte) (header, error) {
	if len(v) < 25 {
		return header{}, errors.New("short changelog header")
	}
	return header{id: int64(binary.BigEndian.Uint64(v)), chunks: int(binary.BigEndian.Uint32(v[8:])), crc: binary.BigEndian.Uint32(v[12:]),
		done: v[16] == 1, position: int64(binary.BigEndian.Uint64(v[17:])), meta: bytes.Clone(v[25:])}, nil
}

// changelogRecords are the records of snapshot s of the task whose
// changelog partition is p.
func changelogRecords(topic string, p int32, s *snapshot) []*kgo.Record {
	data := encodeParts(s.Parts)
	var recs []*kgo.Record
	for i := 0; i == 0 || i*chunkSize < len(data); i++ {
		chunk := data[i*chunkSize : min(len(data), (i+1)*chunkSize)]
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(chunk)), uint64(s.ID))
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(chunkPrefix + strconv.Itoa(i)), Value: append(v, chunk...)})
	}
	h := appendHeader(nil, s, len(recs), crc32.Checksum(data, castagnoli))
	return append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(headerKey), Value: h})
}

// taskMeta is what a task's offset commit says in its metadata:
// "weir <id> at=<offset> wm=<ms>[ done]".
type taskMeta struct {
	// ID is the task's checkpoint committed with the offset; Done: the
	// task read its input to the end.
	ID   int64
	Done bool
	// At is the changelog offset of the first record of the checkpoint's
	// base (the checkpoint's own first record for a base; -1: unknown, as
	// in metadata of an older weir): a restore reads from there.
	At int64
	// Watermark is the task's watermark at the checkpoint (MinTime: none
	// yet): any member reads the group's watermarks from the offsets.
	// Idle: its partition was idle then (the group's alignment leaves
	// it out).
	Watermark etime.Time
	Idle      bool
}

func (t taskMeta) String() string {
	m := metaPrefix + strconv.FormatInt(t.ID, 10)
	if t.At >= 0 {
		m += " at=" + strconv.FormatInt(t.At, 10)
	}
	if t.Watermark != etime.MinTime {
		m += " wm=" + strconv.FormatInt(int64(t.Watermark), 10)
	}
	if t.Idle {
		m += " idle"
	}
	if t.Done {
		m += " done"
	}
	return m
}

// parseMeta reads taskMeta's text; ok is false for metadata weir did not
// write.
func parseMeta(m string) (t taskMeta, ok bool) {
	rest, ok := strings.CutPrefix(m, metaPrefix)
	if !ok {
		return t, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return t, false
	}
	t = taskMeta{At: -1, Watermark: etime.MinTime}
	var err error
	if t.ID, err = strconv.ParseInt(fields[0], 10, 64); err != nil {
		return t, false
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "done":
			t.Done = true
		case "idle":
			t.Idle = true
		case "at":
			t.At, err = strconv.ParseInt(v, 10, 64)
		case "wm":
			var ms int64
			ms, err = strconv.ParseInt(v, 10, 64)
			t.Watermark = etime.Time(ms)
		}
		if err != nil {
			return t, false
		}
	}
	return t, true
}

// readStats tell what a restore read: from the changelog offset from
// (-1: from the state directory), records records of bytes bytes.
type readStats struct {
	from    int64
	records int
	bytes   int64
	// deltas is the delta records (buckets) applied.
	deltas int
	// cached is the checkpoint id of the state directory's copy when a
	// restore read the changelog instead (0: none).
	cached int64
}

// readSnapshot reads changelog partition p of topic from offset from
// (read_committed) until it has the header of checkpoint id and what it
// needs (scan), and returns the snapshot and the offset of its header.
// start holds the items of a copy of an earlier checkpoint the read
// starts after (nil: none). The group's committed offset names id and
// commits with it, so the header is there once the offset is stable;
// wait bounds the search. The rebuild returned tells the chain of the
// snapshot. progress, unless nil, is told after each fetch the records
// and bytes read and the records left to the partition's end.
func readSnapshot(ctx context.Context, opts []kgo.Opt, topic string, p int32, from int64, id int64, wait time.Duration, start *rebuild, progress func(records, bytes, remaining int64)) (*snapshot, int64, readStats, *rebuild, error) {
	st := readStats{from: from}
	sc := newScan(fmt.Sprintf("changelog %s partition %d", topic, p), id, start)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cl, err := kgo.NewClient(append(slices.Clone(opts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return nil, 0, st, nil, err
	}
	defer cl.Close()
	// What the search saw, for its error: the partition's end and last
	// stable offset in the last fetch.
	hwm, lso := int64(-1), int64(-1)
	for {
		f := cl.PollFetches(ctx)
		f.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err == nil {
				hwm, lso = fp.HighWatermark, fp.LastStableOffset
			}
		})
		if err := ctx.Err(); err != nil {
			if perr := parent.Err(); perr != nil {
				// A rebalance or a stop, not the wait: the caller tells.
				return nil, 0, st, nil, fmt.Errorf("%s: reading checkpoint %d interrupted: %w", sc.where, id, perr)
			}
			return nil, 0, st, nil, fmt.Errorf("%s: checkpoint %d not found from offset %d within %v (the group's offsets name it; read %d records, headers of checkpoints %v; the partition ends at %d, its last stable offset is %d)",
				sc.where, id, from, wait, st.records, sc.ids, hwm, lso)
		}
		for _, fe := range f.Errors() {
			return nil, 0, st, nil, fmt.Errorf("%s: %w", sc.where, fe.Err)
		}
		var found *snapshot
		var at int64
		var ferr error
		f.EachRecord(func(r *kgo.Record) {
			if found != nil || ferr != nil {
				return
			}
			st.records++
			st.bytes += int64(len(r.Key) + len(r.Value))
			if found, ferr = sc.record(r.Key, r.Value); found != nil {
				at = r.Offset
			}
		})
		if ferr != nil {
			return nil, 0, st, nil, ferr
		}
		if progress != nil {
			f.EachPartition(func(fp kgo.FetchTopicPartition) {
				if fp.Err == nil && len(fp.Records) > 0 {
					progress(int64(st.records), st.bytes, max(fp.HighWatermark-fp.Records[len(fp.Records)-1].Offset-1, 0))
				}
			})
		}
		if found != nil {
			st.deltas = sc.deltas
			return found, at, st, sc.b, nil
		}
	}
}

// scan is a restore's reading of a changelog partition, record by
// record, in order, until the header of checkpoint id: a base needs its
// chunks, read before its header; a delta (keyed.go) needs the base it is
// on and the deltas after it, applied to the base's items (or to those of
// a copy of an earlier checkpoint on that base, which the read starts
// after).
type scan struct {
	where string
	id    int64
	b     *rebuild
	// chunks are the newest chunk of each index, with its checkpoint id.
	chunks map[int]scanChunk
	// ids are the checkpoint ids of the other headers read (16 at most),
	// for an error.
	ids []int64
	// deltas counts the delta records read (not their tombstones).
	deltas int
}

type scanChunk struct {
	id   int64
	data []byte
}

func newScan(where string, id int64, start *rebuild) *scan {
	if start == nil {
		start = &rebuild{}
	}
	return &scan{where: where, id: id, b: start, chunks: map[int]scanChunk{}}
}

// base assembles base checkpoint h's parts from its chunks.
func (sc *scan) base(h header) (map[string][]byte, error) {
	var data []byte
	for i := range h.chunks {
		c, ok := sc.chunks[i]
		if !ok || c.id != h.id {
			return nil, fmt.Errorf("%s: checkpoint %d lacks chunk %d", sc.where, h.id, i)
		}
		data = append(data, c.data...)
	}
	if crc32.Checksum(data, castagnoli) != h.crc {
		return nil, fmt.Errorf("%s: checkpoint %d fails its checksum", sc.where, h.id)
	}
	parts, err := decodeParts(data)
	if err != nil {
		return nil, fmt.Errorf("%s: checkpoint %d: %w", sc.where, h.id, err)
	}
	return parts, nil
}

// record reads the next record (committed, in offset order); it returns
// the checkpoint once its header was read. The key and value must stay
// unchanged.
func (sc *scan) record(key, value []byte) (*snapshot, error) {
	k := string(key)
	if d, ok := strings.CutPrefix(k, deltaPrefix); ok {
		if len(value) > 0 {
			sc.deltas++
		}
		sc.b.onDelta(d, value)
		return nil, nil
	}
	if i, ok := strings.CutPrefix(k, chunkPrefix); ok {
		n, err := strconv.Atoi(i)
		if err == nil && len(value) >= 8 {
			sc.chunks[n] = scanChunk{int64(binary.BigEndian.Uint64(value)), value[8:]}
		}
		return nil, nil
	}
	switch k {
	case headerKey:
		h, err := parseHeader(value)
		if err != nil {
			return nil, nil
		}
		if h.id != sc.id {
			sc.other(h.id)
			// A base a later delta may be on.
			if parts, err := sc.base(h); err == nil {
				sc.b.onBase(h.id, parts, h.meta)
			}
			return nil, nil
		}
		parts, err := sc.base(h)
		if err != nil {
			return nil, err
		}
		sc.b.onBase(h.id, parts, h.meta)
		return &snapshot{ID: h.id, Meta: h.meta, Parts: parts, Done: h.done, Position: h.position}, nil
	case deltaHeaderKey:
		h, err := parseDeltaHeader(value)
		if err != nil {
			return nil, nil
		}
		if h.id != sc.id {
			sc.other(h.id)
			return nil, nil
		}
		parts, err := sc.b.finish(h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.where, err)
		}
		return &snapshot{ID: h.id, Meta: sc.b.meta, Parts: parts, Done: h.done, Position: h.position}, nil
	}
	return nil, nil
}

func (sc *scan) other(id int64) {
	if len(sc.ids) < 16 {
		sc.ids = append(sc.ids, id)
	}
}
