package fileio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// readBufSize is the size of a framer's read buffer.
const readBufSize = 64 << 10

// framer splits a byte stream into lines. It is not safe for concurrent
// use. A line returned by next is valid until the next call of next
// (skipRest keeps it).
type framer struct {
	br   *bufio.Reader
	name string
	max  int
	acc  []byte // a line longer than the read buffer, at most max+1+readBufSize bytes
	no   int64  // number of the last line returned
	off  int64  // bytes consumed
	mid  bool   // inside an overlong line whose rest is unread
	cr   bool   // the last line returned ended with "\r\n"
	eof  bool
	err  error // sticky read error
}

func newFramer(r io.Reader, name string, max int) *framer {
	return &framer{br: bufio.NewReaderSize(r, readBufSize), name: name, max: max}
}

// next returns the next line without its "\n" and without one trailing
// "\r" (f.cr tells whether it had one). A line longer than max bytes is too long; when f.mid is then set,
// line is only the part read so far (more than max bytes) and the rest is
// still unread: call skipRest, or next skips it. err is io.EOF at the end
// of input, or a read error wrapped with the input's name.
func (f *framer) next() (line []byte, err error) {
	if f.mid {
		if err := f.skipRest(nil); err != nil {
			return nil, err
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	if f.eof {
		return nil, io.EOF
	}
	f.acc = f.acc[:0]
	for {
		chunk, rerr := f.br.ReadSlice('\n')
		f.off += int64(len(chunk))
		switch {
		case rerr == nil:
			chunk = chunk[:len(chunk)-1]
		case errors.Is(rerr, bufio.ErrBufferFull):
			f.acc = append(f.acc, chunk...)
			n := len(f.acc)
			if f.no == 0 && bytes.HasPrefix(f.acc, bom) {
				n -= len(bom)
			}
			if n > f.max+1 {
				// Too long even without a trailing "\r": stream the rest.
				f.no++
				f.mid = true
				return f.trimBOM(f.acc), nil
			}
			continue
		case rerr == io.EOF:
			f.eof = true
			if len(chunk) == 0 && len(f.acc) == 0 {
				return nil, io.EOF
			}
		default:
			f.err = fmt.Errorf("read %s: %w", f.name, rerr)
			return nil, f.err
		}
		line = chunk
		if len(f.acc) > 0 {
			f.acc = append(f.acc, chunk...)
			line = f.acc
		}
		f.no++
		f.cr = false
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line, f.cr = line[:n-1], true
		}
		return f.trimBOM(line), nil
	}
}

var bom = []byte("\ufeff")

// trimBOM removes a UTF-8 byte order mark from the start of the input.
func (f *framer) trimBOM(line []byte) []byte {
	if f.no == 1 {
		return bytes.TrimPrefix(line, bom)
	}
	return line
}

// skipRest reads the rest of an overlong line without keeping it, passing
// each piece to fn when fn is not nil. The pieces exclude the final "\n".
func (f *framer) skipRest(fn func([]byte)) error {
	for f.mid {
		chunk, rerr := f.br.ReadSlice('\n')
		f.off += int64(len(chunk))
		switch {
		case rerr == nil:
			chunk = chunk[:len(chunk)-1]
			f.mid = false
		case errors.Is(rerr, bufio.ErrBufferFull):
		case rerr == io.EOF:
			f.mid = false
			f.eof = true
		default:
			f.mid = false
			f.err = fmt.Errorf("read %s: %w", f.name, rerr)
			return f.err
		}
		if fn != nil && len(chunk) > 0 {
			fn(chunk)
		}
	}
	return nil
}
