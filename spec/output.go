package spec

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// output is everything the job writes or counts outside the engine:
// result, late and dead-letter lines and the counters that go with them.
// Without checkpoints each item is applied at once. With checkpoints items
// are buffered per subtask epoch and applied when the checkpoint that
// covers them pre-commits, then made durable, and the checkpoint records
// how far each file goes and the counters: a restore truncates the files
// there and starts the counters there, so after any crash the outputs and
// the summary are those of a run that never crashed.
type output struct {
	j      *Job
	epochs *epochs[item] // nil without checkpoints

	mu sync.Mutex // guards the applied state below (items come from many subtasks)
	c  outCounters
}

// outCounters are the output's exact counts, part of each checkpoint.
type outCounters struct {
	Results     int64            `json:"results"`
	Late        int64            `json:"late"`
	Partial     int64            `json:"partial"`
	Controls    int64            `json:"controls"`
	Regressions int64            `json:"regressions"`
	Dead        map[string]int64 `json:"dead"`
	// Offsets are the committed lengths of the sink files, by sink name.
	Offsets map[string]int64 `json:"offsets"`
	// ChannelMax is each source channel's largest timestamp, from which
	// backward jumps (timestamp_regressions) are measured.
	ChannelMax []etime.Time `json:"channel_max,omitempty"`
}

type itemKind uint8

const (
	itemResult itemKind = iota
	itemLate
	itemPartial
	itemDead
	itemControl
	itemRegression
)

type item struct {
	kind   itemKind
	line   []byte // late, partial and dead lines
	res    window.Result[string, []byte]
	reason string
}

func newOutput(j *Job, checkpoints, deterministic bool) *output {
	o := &output{j: j}
	o.c.Dead = map[string]int64{}
	if checkpoints {
		o.epochs = newEpochs[item](deterministic)
	}
	return o
}

// add applies it now, or buffers it in subtask s's epoch.
func (o *output) add(s weir.Subtask, it item) {
	if o.epochs != nil {
		o.epochs.add(s, it)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.apply(&it)
}

// apply writes or counts one item; o.mu is held.
func (o *output) apply(it *item) {
	j := o.j
	var err error
	switch it.kind {
	case itemResult:
		if err = j.results.write(it.res); err == nil {
			o.c.Results++
		}
	case itemLate:
		if err = j.late.write(it.line); err == nil {
			o.c.Late++
		}
	case itemPartial:
		if err = j.partial.write(it.line); err == nil {
			o.c.Partial++
		}
	case itemDead:
		o.c.Dead[it.reason]++
		if j.dead != nil {
			err = j.dead.write(it.line)
		}
	case itemControl:
		o.c.Controls++
	case itemRegression:
		o.c.Regressions++
	}
	j.check(err)
}

// preCommit applies the items checkpoint id covers, makes the files
// durable and writes the counters and file lengths as the part "output".
func (o *output) preCommit(id int64, write func(name string, data []byte) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epochs.take(id, o.apply)
	if err := o.sync(); err != nil {
		return err
	}
	if t, ok := o.j.results.(txnSink); ok {
		if err := t.preCommit(id); err != nil {
			return err
		}
	}
	o.c.ChannelMax = o.j.dec.maxAt(id)
	b, err := json.Marshal(o.c)
	if err != nil {
		return err
	}
	return write("output", b)
}

// finish applies what no checkpoint covered (the end of the run).
func (o *output) finish() {
	if o.epochs == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epochs.rest(o.apply)
}

// sync flushes and fsyncs every sink and records the file lengths.
func (o *output) sync() error {
	o.c.Offsets = map[string]int64{}
	for name, s := range o.j.files {
		n, err := s.sync()
		if err != nil {
			return fmt.Errorf("sink %s: %w", name, err)
		}
		if n >= 0 {
			o.c.Offsets[name] = n
		}
	}
	if o.j.results == nil {
		return nil
	}
	return o.j.results.commit()
}

// restore starts from a checkpoint's counters and cuts the sink files back
// to what it covered.
func (o *output) restore(b []byte) error {
	var c outCounters
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("corrupt output part: %w", err)
	}
	if c.Dead == nil {
		c.Dead = map[string]int64{}
	}
	o.c = c
	return nil
}

func (o *output) counters() outCounters {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.c
	c.Dead = make(map[string]int64, len(o.c.Dead))
	for k, v := range o.c.Dead {
		c.Dead[k] = v
	}
	return c
}
