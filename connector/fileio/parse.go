package fileio

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// parser turns framed lines into items. It is not safe for concurrent
// use; it belongs to one reader or to the background goroutine of a
// shared input.
type parser struct {
	f       *framer
	format  Format
	nch     int
	only    int // keep only the lines of this channel; -1: all
	json    fastjson.Parser
	scratch []byte

	// CSV
	headerDone bool
	keys       [][]byte // the header names as JSON strings followed by ':'
	row        csvRow
	// columns are Options.Columns; held: row holds the first row, read
	// by readHeader and found to be data (columns given, no header).
	columns []string
	held    bool
}

func newParser(f *framer, format Format, nch, only int, columns []string) *parser {
	p := &parser{f: f, format: format, nch: nch, only: only, columns: columns}
	p.row.max = f.max
	return p
}

// next returns the next item. ok is false when the line read belongs to
// another channel than p.only (it is not returned then, and costs little).
// err is io.EOF at the end of input.
func (p *parser) next() (it item, ok bool, err error) {
	if p.format == CSV {
		return p.nextCSV()
	}
	return p.nextJSONL()
}

// item makes an item of l at the framer's position, with a copy of text.
func (p *parser) item(l Line, text []byte) (item, bool, error) {
	if p.only >= 0 && l.Channel != p.only {
		return item{}, false, nil
	}
	if text != nil {
		l.Text = bytes.Clone(text)
	}
	return item{line: l, off: p.f.off, last: p.f.no}, true, nil
}

func (p *parser) bad(no int64, text []byte, reason, format string, args ...any) (item, bool, error) {
	return p.item(Line{Kind: Bad, No: no, Reason: reason, Detail: fmt.Sprintf(format, args...)}, text)
}

func (p *parser) tooLong(no int64, text []byte, what string) (item, bool, error) {
	return p.bad(no, text[:p.f.max], "line_too_long", "%s is longer than the limit of %d bytes", what, p.f.max)
}

var ctlMark = []byte(`"$`)

func (p *parser) nextJSONL() (item, bool, error) {
	for {
		line, err := p.f.next()
		if err != nil {
			return item{}, false, err
		}
		no := p.f.no
		if len(line) > p.f.max {
			if err := p.f.skipRest(nil); err != nil {
				return item{}, false, err
			}
			return p.tooLong(no, line, "the line")
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		ctl := bytes.Contains(trimmed, ctlMark)
		if p.only > 0 && !ctl {
			// Data or Bad: channel 0's.
			return item{}, false, nil
		}
		if i := InvalidUTF8(line); i >= 0 {
			return p.bad(no, line, "utf8_invalid", "invalid UTF-8 at byte offset %d of the line", i)
		}
		if !ctl {
			return p.item(Line{Kind: Data, No: no}, trimmed)
		}
		return p.control(no, line, trimmed)
	}
}

// control classifies a line that may have control keys.
func (p *parser) control(no int64, line, trimmed []byte) (item, bool, error) {
	data := Line{Kind: Data, No: no}
	// Parse first: it bounds the nesting depth, which Validate does not.
	// Validate then rejects what the lenient parser lets through.
	v, err := p.json.ParseBytes(trimmed)
	if err != nil || fastjson.ValidateBytes(trimmed) != nil {
		return p.item(data, trimmed) // json_malformed, for the decoder to report
	}
	o, err := v.Object()
	if err != nil {
		return p.item(data, trimmed)
	}
	var (
		nctl, nfields       int
		field, unknown, dup string
		channel, wm, idle   *fastjson.Value
	)
	o.Visit(func(k []byte, v *fastjson.Value) {
		if len(k) == 0 || k[0] != '$' {
			if nfields == 0 {
				field = string(k)
			}
			nfields++
			return
		}
		nctl++
		var slot **fastjson.Value
		switch string(k) {
		case "$channel":
			slot = &channel
		case "$watermark":
			slot = &wm
		case "$idle":
			slot = &idle
		default:
			if unknown == "" {
				unknown = string(k)
			}
			return
		}
		if *slot != nil && dup == "" {
			dup = string(k)
		}
		*slot = v
	})
	switch {
	case nctl == 0:
		return p.item(data, trimmed)
	case unknown != "":
		return p.bad(no, line, "control_invalid", "unknown control key %s; known: $channel, $watermark, $idle", clip(unknown))
	case dup != "":
		return p.bad(no, line, "control_invalid", "control key %s appears twice", dup)
	}
	ch := 0
	if channel != nil {
		n, ok := intValue(channel)
		if !ok || n < 0 || n >= int64(p.nch) {
			return p.bad(no, line, "channel_invalid", "$channel %s is not a channel number in 0..%d", clip(string(channel.MarshalTo(nil))), p.nch-1)
		}
		ch = int(n)
	}
	switch {
	case wm != nil && idle != nil:
		return p.bad(no, line, "control_invalid", "$watermark and $idle cannot be on one line")
	case (wm != nil || idle != nil) && nfields > 0:
		return p.bad(no, line, "control_invalid", "a control line has no data fields, found %q", clip(field))
	case wm != nil:
		n, ok := intValue(wm)
		if !ok {
			return p.bad(no, line, "control_invalid", "$watermark must be an integer (milliseconds), got %s", clip(string(wm.MarshalTo(nil))))
		}
		return p.item(Line{Kind: Watermark, Channel: ch, No: no, Watermark: etime.Time(n)}, nil)
	case idle != nil:
		if idle.Type() != fastjson.TypeTrue {
			return p.bad(no, line, "control_invalid", "$idle must be true, got %s", clip(string(idle.MarshalTo(nil))))
		}
		return p.item(Line{Kind: Idle, Channel: ch, No: no}, nil)
	}
	if p.only >= 0 && ch != p.only {
		return item{}, false, nil
	}
	// A data line routed by $channel: drop the control keys, keep the rest
	// as written.
	b := append(p.scratch[:0], '{')
	first := true
	o.Visit(func(k []byte, v *fastjson.Value) {
		if len(k) > 0 && k[0] == '$' {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = weir.AppendJSONString(b, string(k))
		b = append(b, ':')
		b = v.MarshalTo(b)
	})
	b = append(b, '}')
	p.scratch = b
	return p.item(Line{Kind: Data, Channel: ch, No: no, Raw: bytes.Clone(trimmed)}, b)
}

// intValue returns the value of a JSON integer written without fraction or
// exponent.
func intValue(v *fastjson.Value) (int64, bool) {
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.MarshalTo(nil)), 10, 64)
	return n, err == nil
}

// clip shortens s for a message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// InvalidUTF8 returns the offset of the first invalid UTF-8 sequence in b,
// or -1.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// isJSONNumber reports whether s is a number in JSON's grammar that
// strconv.ParseFloat accepts (not out of range).
func isJSONNumber(s []byte) bool {
	i, n := 0, len(s)
	digits := func() int {
		j := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i == n:
		return false
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	if i != n {
		return false
	}
	_, err := strconv.ParseFloat(string(s), 64)
	return err == nil
}

// CSV

func (p *parser) nextCSV() (item, bool, error) {
	if !p.headerDone {
		if err := p.readHeader(); err != nil {
			return item{}, false, err
		}
	}
	r := &p.row
	if p.held {
		p.held = false
	} else if _, err := p.nextRow(); err != nil {
		return item{}, false, err
	}
	switch {
	case r.over:
		return p.tooLong(r.start, r.raw, "the row")
	case r.bad8 >= 0:
		return p.bad(r.start, r.raw, "utf8_invalid", "invalid UTF-8 at byte offset %d of the row", r.bad8)
	case r.perr != "":
		return p.bad(r.start, r.raw, "csv_malformed", "%s", r.perr)
	case len(r.ends) != len(p.keys):
		if p.columns != nil {
			return p.bad(r.start, r.raw, "csv_malformed", "row has %d fields, the table %d columns", len(r.ends), len(p.keys))
		}
		return p.bad(r.start, r.raw, "csv_malformed", "row has %d fields, header has %d", len(r.ends), len(p.keys))
	}
	b := append(p.scratch[:0], '{')
	prev := 0
	for i, k := range p.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
		cell := r.fields[prev:r.ends[i]]
		prev = r.ends[i]
		switch {
		case len(cell) == 0 && !r.quoted[i]:
			// An unquoted empty cell is NULL, a quoted one ("") the
			// empty string, as PostgreSQL's COPY ... CSV reads them.
			b = append(b, "null"...)
		case isJSONNumber(cell):
			b = append(b, cell...)
		default:
			b = weir.AppendJSONString(b, string(cell))
		}
	}
	b = append(b, '}')
	p.scratch = b
	return p.item(Line{Kind: Data, No: r.start, Raw: bytes.Clone(r.raw)}, b)
}

// readHeader reads the header row. An input without rows has no header
// and no records. With columns, the first row is the header only when it
// names them (in any order and case), which then map by its names;
// otherwise the columns map by position, and the row is held for nextCSV
// as the first data row.
func (p *parser) readHeader() error {
	p.headerDone = true
	r, err := p.nextRow()
	if p.columns != nil && (err == io.EOF || err == nil) {
		order := p.headerOrder(r, err)
		if order == nil {
			// No header: the columns by position, and the row read is
			// data.
			order, p.held = p.columns, err == nil
		}
		for _, c := range order {
			k := weir.AppendJSONString(nil, c)
			p.keys = append(p.keys, append(k, ':'))
		}
		return nil
	}
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	name := p.f.name
	switch {
	case r.over:
		return fmt.Errorf("%s: csv header (line %d) is longer than the limit of %d bytes", name, r.start, p.f.max)
	case r.bad8 >= 0:
		return fmt.Errorf("%s: csv header (line %d) is not valid UTF-8 (byte offset %d)", name, r.start, r.bad8)
	case r.perr != "":
		return fmt.Errorf("%s: csv header (line %d): %s", name, r.start, r.perr)
	}
	seen := make(map[string]int, len(r.ends))
	prev := 0
	for i, end := range r.ends {
		f := string(r.fields[prev:end])
		prev = end
		if f == "" {
			return fmt.Errorf("%s: csv header (line %d): column %d has an empty name", name, r.start, i+1)
		}
		if j, ok := seen[f]; ok {
			return fmt.Errorf("%s: csv header (line %d): duplicate column name %q (columns %d and %d)", name, r.start, f, j+1, i+1)
		}
		seen[f] = i
		k := weir.AppendJSONString(nil, f)
		p.keys = append(p.keys, append(k, ':'))
	}
	return nil
}

// headerOrder is, when row r (read with err) is a header naming each of
// p.columns once, in any order and case, among fields of other names (a
// file of more columns than the table reads, by name), its names: the
// columns' spellings for theirs; nil otherwise.
func (p *parser) headerOrder(r *csvRow, err error) []string {
	if err != nil || r.over || r.bad8 >= 0 || r.perr != "" || len(r.ends) < len(p.columns) {
		return nil
	}
	order := make([]string, 0, len(r.ends))
	named := 0
	prev := 0
	for _, end := range r.ends {
		f := string(r.fields[prev:end])
		prev = end
		if i := slices.IndexFunc(p.columns, func(c string) bool { return strings.EqualFold(c, f) }); i >= 0 {
			if slices.Contains(order, p.columns[i]) {
				return nil
			}
			f = p.columns[i]
			named++
		} else if f == "" || slices.Contains(order, f) {
			return nil
		}
		order = append(order, f)
	}
	if named != len(p.columns) {
		return nil
	}
	return order
}

// nextRow reads the next non-blank row.
func (p *parser) nextRow() (*csvRow, error) {
	r := &p.row
	active := false
	for {
		line, err := p.f.next()
		if err == io.EOF && active {
			r.eof()
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		if !active {
			if len(line) <= p.f.max && len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			r.begin(p.f.no)
			active = true
		} else {
			r.newline(p.f.no)
		}
		r.feed(line)
		if p.f.mid {
			if err := p.f.skipRest(r.feed); err != nil {
				return nil, err
			}
		}
		if r.eol(p.f.cr) {
			return r, nil
		}
	}
}

type csvState uint8

const (
	csvFieldStart csvState = iota // at the start of a field
	csvUnquoted                   // in a field without quotes
	csvQuoted                     // in a quoted field
	csvQuote                      // just after a quote in a quoted field
	csvError                      // after a parse error: the rest of the line is ignored
)

// csvRow parses one CSV row as encoding/csv does (comma, no lazy quotes,
// no leading-space trimming), streaming: it is fed the row's lines piece
// by piece, keeps at most max bytes of raw text, and stops keeping fields
// once the row is over the limit.
type csvRow struct {
	max    int
	start  int64 // the line where the row starts
	no     int64 // the current line
	col    int   // bytes of the current line fed so far
	state  csvState
	raw    []byte // the raw row, lines joined by "\n", at most max bytes
	over   bool   // the row is longer than max
	fields []byte // the fields' contents, concatenated
	ends   []int  // the end of each field in fields
	quoted []bool // whether each field was quoted (by its index)
	perr   string // the parse error
	bad8   int    // the offset of invalid UTF-8 in the row, or -1
}

func (r *csvRow) begin(no int64) {
	r.start, r.no, r.col = no, no, 0
	r.state = csvFieldStart
	r.raw, r.over = r.raw[:0], false
	r.fields, r.ends, r.quoted = r.fields[:0], r.ends[:0], r.quoted[:0]
	r.perr, r.bad8 = "", -1
}

// newline starts line no of a row continuing in a quoted field.
func (r *csvRow) newline(no int64) {
	r.no, r.col = no, 0
	r.keep([]byte{'\n'})
}

// keep adds b to the raw row and checks it is UTF-8.
func (r *csvRow) keep(b []byte) {
	if r.over {
		return
	}
	if len(r.raw)+len(b) > r.max {
		r.over = true
		r.raw = append(r.raw, b[:r.max-len(r.raw)]...)
		return
	}
	if r.bad8 < 0 {
		if i := InvalidUTF8(b); i >= 0 {
			r.bad8 = len(r.raw) + i
		}
	}
	r.raw = append(r.raw, b...)
}

func (r *csvRow) add(c byte) {
	if !r.over {
		r.fields = append(r.fields, c)
	}
}

func (r *csvRow) endField() {
	r.ends = append(r.ends, len(r.fields))
	if len(r.quoted) < len(r.ends) {
		r.quoted = append(r.quoted, false)
	}
}

// quote marks the current field quoted.
func (r *csvRow) quote() {
	r.quoted = append(r.quoted, true)
}

func (r *csvRow) fail(err string, col int) {
	r.state = csvError
	if r.perr == "" {
		r.perr = fmt.Sprintf("%s (line %d, column %d)", err, r.no, col)
	}
}

// feed parses the next piece of the current line. A "\r" that ended a
// line longer than max is fed too; that does not change where the row
// ends, and such a row is bad anyway.
func (r *csvRow) feed(b []byte) {
	r.keep(b)
	for i, c := range b {
		switch r.state {
		case csvFieldStart:
			switch c {
			case '"':
				r.quote()
				r.state = csvQuoted
			case ',':
				r.endField()
			default:
				r.add(c)
				r.state = csvUnquoted
			}
		case csvUnquoted:
			switch c {
			case ',':
				r.endField()
				r.state = csvFieldStart
			case '"':
				r.fail(`bare " in non-quoted field`, r.col+i+1)
			default:
				r.add(c)
			}
		case csvQuoted:
			if c == '"' {
				r.state = csvQuote
			} else {
				r.add(c)
			}
		case csvQuote:
			switch c {
			case '"':
				r.add('"')
				r.state = csvQuoted
			case ',':
				r.endField()
				r.state = csvFieldStart
			default:
				r.fail(`extraneous or missing " in quoted field`, r.col+i)
			}
		case csvError:
			r.col += len(b)
			return
		}
	}
	r.col += len(b)
}

// eol ends the current line (which ended with "\r\n" when cr) and
// reports whether the row is complete. A line break inside a quoted field
// is kept as it was, "\r\n" or "\n" (RFC 4180; encoding/csv would turn
// "\r\n" into "\n").
func (r *csvRow) eol(cr bool) bool {
	switch r.state {
	case csvQuoted:
		if cr {
			r.add('\r')
		}
		r.add('\n')
		return false
	case csvError:
		return true
	}
	r.endField()
	return true
}

// eof ends a row cut by the end of input inside a quoted field.
func (r *csvRow) eof() {
	r.fail(`extraneous or missing " in quoted field`, r.col+1)
}
