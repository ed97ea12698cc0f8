package group

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"github.com/weirstream/weir/internal/flock"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/spec"
)

// identity is what a member's state directory records of its member.
type identity struct {
	Job      string `json:"job"`
	SpecHash string `json:"spec_hash"`
	Instance string `json:"instance"`
}

const identityFile = "member.json"

// lockStateDir creates and locks dir for one member process, and refuses
// a directory of another job or instance (another spec of the job is
// recorded: the group judges the spec).
func lockStateDir(dir string, p *spec.Plan, instance string) (unlock func(), err error) {
	if dir == "" {
		return nil, errors.New("--instance needs --state-dir: the member keeps its tasks' state there")
	}
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		return nil, err
	}
	release, err := flock.TryLock(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("--state-dir %s: %w (one process per state directory)", dir, err)
	}
	want := identity{Job: jobName(p), SpecHash: outfmt.SpecHash(p), Instance: instance}
	path := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b, _ = json.MarshalIndent(want, "", "  ")
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	case err == nil:
		var have identity
		err = json.Unmarshal(b, &have)
		switch {
		case err != nil:
		case have.Job != want.Job || have.Instance != want.Instance:
			err = fmt.Errorf("--state-dir %s belongs to job %s, instance %s, not job %s, instance %s: give each member and job its own directory, or empty it",
				dir, have.Job, have.Instance, want.Job, want.Instance)
		case have.SpecHash != want.SpecHash:
			// Another spec of the job (after weir reset): the group
			// refuses it if it runs another, and the tasks' copies are
			// kept per run, so none of an old run is read.
			b, _ = json.MarshalIndent(want, "", "  ")
			err = os.WriteFile(path, append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		_ = release()
		return nil, err
	}
	return func() { _ = release() }, nil
}

// cachePath is task p's file in the state directory, under the group's
// run id: a reset group's new run never reads an old run's state.
func cachePath(dir string, run int64, p int32) string {
	return filepath.Join(dir, "tasks", strconv.FormatInt(run, 10), strconv.Itoa(int(p))+".snap")
}

// writeCache keeps task p's committed snapshot s of the group's run, whose changelog header
// is at offset at and whose chain is c, in the state directory (written
// whole, then renamed).
func writeCache(dir string, run int64, p int32, s *snapshot, at int64, c chain) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(cachePath(dir, run, p)), 0o755); err != nil {
		return err
	}
	parts := maps.Clone(s.Parts)
	parts[chainPart] = c.encode()
	parts[taskPart] = strconv.AppendInt(nil, int64(p), 10)
	data := encodeParts(parts)
	b := binary.BigEndian.AppendUint64(nil, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	b = appendHeader(b, s, 1, crc32.Checksum(data, castagnoli))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tmp := cachePath(dir, run, p) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, cachePath(dir, run, p))
}

// readCache reads task p's snapshot from the state directory (nil: none),
// the changelog offset of its header and its chain.
func readCache(dir string, run int64, p int32) (*snapshot, int64, chain, error) {
	s, at, err := readCacheFile(dir, run, p)
	c := chain{base: -1}
	if s != nil {
		if b, ok := s.Parts[chainPart]; ok {
			delete(s.Parts, chainPart)
			c = decodeChain(b)
		}
		if b, ok := s.Parts[taskPart]; ok {
			delete(s.Parts, taskPart)
			if string(b) != strconv.Itoa(int(p)) {
				// A file moved or copied from another task's.
				return nil, 0, c, fmt.Errorf("the copy is task %s's, not task %d's", b, p)
			}
		}
	}
	return s, at, c, err
}

// taskPart names a state directory copy's task among its parts.
const taskPart = "\x00task"

func readCacheFile(dir string, run int64, p int32) (*snapshot, int64, error) {
	if dir == "" {
		return nil, 0, nil
	}
	b, err := os.ReadFile(cachePath(dir, run, p))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if len(b) < 16 || crc32.Checksum(b[:len(b)-4], castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, 0, errors.New("checksum mismatch")
	}
	b = b[:len(b)-4]
	at := int64(binary.BigEndian.Uint64(b))
	n := int(binary.BigEndian.Uint32(b[8:]))
	if len(b) < 12+n {
		return nil, 0, errors.New("truncated")
	}
	data := bytes.Clone(b[12 : 12+n])
	h, err := parseHeader(b[12+n:])
	if err != nil {
		return nil, 0, err
	}
	parts, err := decodeParts(data)
	if err != nil {
		return nil, 0, err
	}
	return &snapshot{ID: h.id, Meta: h.meta, Parts: parts, Done: h.done, Position: h.position}, at, nil
}

// forgetOtherRuns removes the task files of runs other than run (a reset
// group's) from the state directory.
func forgetOtherRuns(dir string, run int64) error {
	entries, err := os.ReadDir(filepath.Join(dir, "tasks"))
	if err != nil {
		return err
	}
	keep := strconv.FormatInt(run, 10)
	for _, e := range entries {
		if e.Name() != keep {
			if err := os.RemoveAll(filepath.Join(dir, "tasks", e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
