package fileio

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/weirstream/weir/connector"
)

// cursor is the one read position that the channels of a strict source or
// of an Input share. Its fields are guarded by mu.
//
// A file (strict mode) is parsed directly under mu: reading a regular file
// does not block for long. An Input is read by a feed goroutine, so that a
// Read never waits for input.
//
// In strict mode a channel emits lines only while the next line of the
// input is its own. Otherwise a channel that meets another channel's line
// appends it to that channel's queue; the queues are unbounded (a channel
// that is not read while the others are keeps every line of its own in
// memory), which is fine for stdin, whose lines go mostly to channel 0.
type cursor struct {
	s *source

	mu      sync.Mutex
	in      io.Reader // the input read by a feed goroutine; nil: parse file directly
	file    *os.File  // a file the cursor owns and closes (it may also be in)
	p       *parser   // the parser when reading directly
	fd      *feed     // the feed goroutine of an Input
	started bool
	readers int // open readers
	closed  bool
	pending []item // lines read and not yet taken, in input order
	head    int    // the first pending item not yet taken
	end     error  // io.EOF or a read error once the input is exhausted
	queues  [][]item

	// The position after the last item taken by any channel (a strict
	// file's checkpoint position), and whether a restore set it.
	off, line int64
	restored  bool
	// sum is the input identity of the position (prefixSum), under sumMu
	// (not mu: advancing it reads the file).
	sumMu sync.Mutex
	sum   prefixSum
}

func newCursor(s *source, in io.Reader, file *os.File) *cursor {
	c := &cursor{s: s, in: in, file: file}
	if !s.o.Strict {
		c.queues = make([][]item, s.o.Channels)
	}
	return c
}

// open registers a reader.
func (c *cursor) open() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("fileio: " + c.s.o.Name + ": the input was read already and cannot be opened again")
	}
	if c.in == nil && c.file == nil {
		f, err := c.s.open()
		if err != nil {
			return err
		}
		c.file = f
	}
	c.readers++
	return nil
}

// release unregisters a reader; the last one stops the feed goroutine
// and closes the file.
func (c *cursor) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readers--; c.readers > 0 {
		return nil
	}
	c.closed = true
	c.pending, c.queues = nil, nil
	if c.fd != nil {
		close(c.fd.quit)
	}
	if c.file != nil {
		// For a pipe, this also ends a Read of the feed goroutine.
		return c.file.Close()
	}
	return nil
}

// start begins reading, at the first Read of any channel.
func (c *cursor) start() {
	if c.started {
		return
	}
	c.started = true
	if c.in != nil {
		c.fd = startFeed(c.s, c.in)
	} else if c.p == nil { // not made by a restore
		c.p = c.s.newParser(c.file, -1)
	}
}

// backlog reports whether lines are there for channel ch to take at once
// (W10): always for a file the cursor reads itself, for an Input only
// while lines it read ahead wait in the cursor or the feed.
func (c *cursor) backlog(ch int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.in == nil:
		return true
	case c.head < len(c.pending):
		return true
	case c.queues != nil && len(c.queues[ch]) > 0:
		return true
	}
	return c.fd != nil && len(c.fd.out) > 0
}

// peek returns the next pending item, reading more if the input can give
// it without blocking.
func (c *cursor) peek() (*item, bool) {
	if c.head == len(c.pending) {
		c.pending, c.head = c.pending[:0], 0
		if c.end != nil {
			return nil, false
		}
		if c.p != nil {
			it, _, err := c.p.next()
			if err != nil {
				c.end = err
				return nil, false
			}
			c.pending = append(c.pending, it)
		} else {
			select {
			case m, ok := <-c.fd.out:
				if !ok {
					// Unreachable: the feed ends with an end message.
					c.end = io.ErrUnexpectedEOF
					return nil, false
				}
				c.pending = m.items // the feed sends each slice once
				if m.end != nil {
					c.end = m.end
				}
				if len(c.pending) == 0 {
					return nil, false
				}
			default:
				return nil, false
			}
		}
	}
	return &c.pending[c.head], true
}

func (c *cursor) pop() item {
	it := c.pending[c.head]
	c.pending[c.head] = item{}
	c.head++
	c.off, c.line = it.off, it.last
	return it
}

// read takes up to Batch lines of channel ch, appending them to dst.
func (c *cursor) read(ch int, dst []item) ([]item, connector.ReadStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return dst, connector.Done, nil
	}
	c.start()
	batch := c.s.o.Batch
	if c.s.o.Strict {
		for len(dst) < batch {
			it, ok := c.peek()
			if !ok || it.line.Channel != ch {
				break
			}
			dst = append(dst, c.pop())
		}
		return c.status(dst, false, len(dst) > 0)
	}
	q := c.queues[ch]
	n := min(len(q), batch)
	dst = append(dst, q[:n]...)
	clear(q[:n])
	if n == len(q) {
		q = q[:0]
	} else {
		q = q[n:]
	}
	c.queues[ch] = q
	moved := false
	for pulled := 0; len(dst) < batch && pulled < scanFactor*batch; pulled++ {
		it, ok := c.peek()
		if !ok {
			break
		}
		if o := it.line.Channel; o != ch {
			c.queues[o] = append(c.queues[o], c.pop())
			moved = true
			continue
		}
		dst = append(dst, c.pop())
	}
	return c.status(dst, len(c.queues[ch]) > 0, len(dst) > 0 || moved)
}

// status is the result of a read that took dst: Emitted on progress,
// otherwise Done at the end of input, or Waiting.
func (c *cursor) status(dst []item, queued, progress bool) ([]item, connector.ReadStatus, error) {
	if progress {
		return dst, connector.Emitted, nil
	}
	if queued || c.head < len(c.pending) || c.end == nil {
		return dst, connector.Waiting, nil
	}
	if c.end != io.EOF {
		return dst, 0, c.end
	}
	return dst, connector.Done, nil
}

// message is what the feed goroutine sends: lines, then an end.
type message struct {
	items []item
	end   error // io.EOF or an error, on the last message
}

// feed is the goroutine reading an Input. It parses lines and sends them
// in batches over out; a batch is sent when it is full and whenever the
// goroutine is about to read from the input (which may block), so that
// lines never wait in the goroutine for more input. It ends at the end of
// input, at a read error, or when quit is closed (by the Close of the
// last reader). A goroutine blocked in a Read of the input ends only when
// that Read returns: for a real stdin, it may stay blocked in the read
// system call until the process exits; an *os.File that the source opened
// itself is closed, which ends the Read.
type feed struct {
	out  chan message
	quit chan struct{}
}

// errQuit stops the parser when the feed is told to quit.
var errQuit = errors.New("fileio: closed")

// feedReader calls flush before each read of the input.
type feedReader struct {
	r     io.Reader
	flush func() bool
}

func (f *feedReader) Read(b []byte) (int, error) {
	if !f.flush() {
		return 0, errQuit
	}
	return f.r.Read(b)
}

func startFeed(s *source, in io.Reader) *feed {
	fd := &feed{out: make(chan message, 16), quit: make(chan struct{})}
	batch := make([]item, 0, s.o.Batch)
	send := func(m message) bool {
		select {
		case fd.out <- m:
			return true
		case <-fd.quit:
			return false
		}
	}
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		ok := send(message{items: batch})
		batch = make([]item, 0, s.o.Batch)
		return ok
	}
	p := s.newParser(&feedReader{r: in, flush: flush}, -1)
	go func() {
		for {
			it, _, err := p.next()
			if err != nil {
				if errors.Is(err, errQuit) {
					return
				}
				send(message{items: batch, end: err})
				return
			}
			batch = append(batch, it)
			if len(batch) >= s.o.Batch && !flush() {
				return
			}
		}
	}()
	return fd
}
