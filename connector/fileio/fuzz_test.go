package fileio

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// fuzzRun reads data in every mode. It returns the results, or the error
// of each mode.
func fuzzRun(t *testing.T, o Options, data []byte) (map[string]*result, map[string]error) {
	path := writeFile(t, "in", string(data))
	res, errs := map[string]*result{}, map[string]error{}
	for _, m := range modes {
		o := o
		o.Strict = m.strict
		if m.stdin {
			o.Input = bytes.NewReader(data)
			o.Name = "in"
		} else {
			o.Path = path
			o.Name = "in"
		}
		src, err := New(o)
		if err == nil {
			res[m.name], err = run(t, src, o.Channels)
		}
		if err != nil {
			errs[m.name] = err
		}
	}
	return res, errs
}

// full describes a line completely.
func full(l Line) string {
	return describe(l) + "|" + l.Detail + "|" + string(l.Text) + "|" + l.Watermark.String()
}

// sameLines checks that every mode emitted the same lines, each on its
// channel, strict modes in input order, and returns them sorted by No.
func sameLines(t *testing.T, res map[string]*result) []Line {
	t.Helper()
	var ref []string
	var lines []Line
	for _, m := range modes {
		r := res[m.name]
		all := slices.Clone(r.all())
		if m.strict || r.chans[0].ch == 0 && len(r.chans) == 1 {
			if !slices.IsSortedFunc(r.order, func(a, b Line) int { return int(a.No - b.No) }) {
				t.Fatalf("%s: lines out of input order: %q", m.name, texts(r.order))
			}
		}
		for _, o := range r.chans {
			if !slices.IsSortedFunc(o.lines, func(a, b Line) int { return int(a.No - b.No) }) {
				t.Fatalf("%s: channel %d out of input order: %q", m.name, o.ch, texts(o.lines))
			}
			if len(o.wms) != 1 {
				t.Fatalf("%s: channel %d watermarks %v", m.name, o.ch, o.wms)
			}
		}
		slices.SortStableFunc(all, func(a, b Line) int { return int(a.No - b.No) })
		var got []string
		for i, l := range all {
			if i > 0 && l.No == all[i-1].No {
				t.Fatalf("%s: line %d twice", m.name, l.No)
			}
			if l.Kind == Bad && l.Channel != 0 {
				t.Fatalf("%s: bad line %d on channel %d", m.name, l.No, l.Channel)
			}
			got = append(got, full(l))
		}
		if ref == nil {
			ref, lines = got, all
		} else if !slices.Equal(got, ref) {
			t.Fatalf("%s differs from %s:\n%q\n%q", m.name, modes[0].name, got, ref)
		}
	}
	return lines
}

func fuzzSeeds(f *testing.F, seeds []string) {
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i), i%2 == 0)
	}
}

func FuzzJSONL(f *testing.F) {
	fuzzSeeds(f, []string{
		"",
		"{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}",
		"{\"$channel\":1,\"a\":1.50}\n{\"$channel\":2}\n{\"$watermark\":5}\n{\"$idle\":true,\"$channel\":1}\n",
		"{\"$foo\":1}\n{\"$watermark\":\"x\"}\n{\"$idle\":1,\"a\":2}\n{\"$channel\":9}\n",
		"\xff\n{\"$channel\":1,\"\xc3\":1}\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n{}",
		"{\"a\":\"$x\"}\n[\"$channel\"]\n{\"$channel\":1,\"k\\u0041\":\"\\u00e9\",\"n\":{\"$x\":1}}\n",
		"\r\n\r\r\n \t\v\f\n\u00a0\n{\"$channel\":0,\"$channel\":1}",
		"\ufeff{\"a\":1}\r\n\ufeff{}",
	})
	f.Fuzz(func(t *testing.T, data []byte, channels uint8, small bool) {
		n := int(channels%3) + 1
		maxLine := DefaultMaxLine
		if small {
			maxLine = 24
		}
		res, errs := fuzzRun(t, Options{Channels: n, MaxLine: maxLine, Batch: 3}, data)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		lines := sameLines(t, res)

		// An independent count of the lines to emit.
		pieces := bytes.Split(data, []byte("\n"))
		if len(pieces[len(pieces)-1]) == 0 {
			pieces = pieces[:len(pieces)-1]
		}
		var want []int64
		for i, p := range pieces {
			p = bytes.TrimSuffix(p, []byte("\r"))
			if i == 0 {
				p = bytes.TrimPrefix(p, bom)
			}
			pieces[i] = p
			if len(p) > maxLine || len(bytes.TrimSpace(p)) > 0 {
				want = append(want, int64(i+1))
			}
		}
		var got []int64
		for _, l := range lines {
			got = append(got, l.No)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("line numbers %v, want %v", got, want)
		}
		for _, l := range lines {
			p := pieces[l.No-1]
			trimmed := bytes.TrimSpace(p)
			switch {
			case len(p) > maxLine:
				if l.Kind != Bad || l.Reason != "line_too_long" || !bytes.Equal(l.Text, p[:maxLine]) {
					t.Fatalf("line %d: %s, want line_too_long", l.No, full(l))
				}
			case !utf8.Valid(p):
				if l.Kind != Bad || l.Reason != "utf8_invalid" || !bytes.Equal(l.Text, p) {
					t.Fatalf("line %d: %s, want utf8_invalid", l.No, full(l))
				}
			case !bytes.Contains(p, []byte("$")):
				if l.Kind != Data || l.Channel != 0 || !bytes.Equal(l.Text, trimmed) {
					t.Fatalf("line %d: %s, want the data %q", l.No, full(l), trimmed)
				}
			case l.Kind == Data && fastjson.ValidateBytes(trimmed) == nil:
				if err := fastjson.ValidateBytes(l.Text); err != nil {
					t.Fatalf("line %d: %s: %v", l.No, full(l), err)
				}
				if l.Channel == 0 && !bytes.Equal(l.Text, trimmed) && !bytes.Contains(trimmed, []byte(`"$channel"`)) {
					t.Fatalf("line %d: %s, want the data %q", l.No, full(l), trimmed)
				}
			case l.Kind == Data:
				if l.Channel != 0 || !bytes.Equal(l.Text, trimmed) {
					t.Fatalf("line %d: %s, want the data %q", l.No, full(l), trimmed)
				}
			}
			if l.Kind == Bad && len(l.Text) > maxLine {
				t.Fatalf("line %d: bad text of %d bytes", l.No, len(l.Text))
			}
		}
	})
}

// spaceLine reports whether data has a white-space-only line, which
// encoding/csv reads as a record and fileio skips.
func spaceLine(data []byte) bool {
	for _, p := range bytes.Split(data, []byte("\n")) {
		p = bytes.TrimSuffix(p, []byte("\r"))
		if len(p) > 0 && len(bytes.TrimSpace(p)) == 0 {
			return true
		}
	}
	return false
}

func FuzzCSV(f *testing.F) {
	fuzzSeeds(f, []string{
		"",
		"a,b\n1,2\n",
		"id,name,amount\r\n1,\"x,\"\"y\"\"\",2.5\n\n2,\"multi\nline\",-1e3\n3,,007\n4,a\n",
		"a,b\n1,a\"b\n2,\"a\"b\n3,\"open\n",
		"a,a\n",
		"a,,b\n",
		"\"a\nb\",c\n\"\",\n",
		"a\n\xff\n\"\xc3\"\n",
		"h\n" + strings.Repeat("x", 40) + "\n\"" + strings.Repeat("y\n", 20) + "\"\n1",
		"a,b\r\n\"1\r\n2\",3\r",
		"\ufeffa,b\n1,2\n",
	})
	f.Fuzz(func(t *testing.T, data []byte, channels uint8, small bool) {
		n := int(channels%3) + 1
		maxLine := DefaultMaxLine
		if small {
			maxLine = 24
		}
		res, errs := fuzzRun(t, Options{Format: CSV, Channels: n, MaxLine: maxLine, Batch: 3}, data)
		if len(errs) > 0 {
			if len(errs) != len(modes) {
				t.Fatalf("errors in some modes only: %v", errs)
			}
			msg := errs[modes[0].name].Error()
			for _, err := range errs {
				if err.Error() != msg {
					t.Fatalf("different errors: %v", errs)
				}
			}
			if !strings.Contains(msg, "csv header") {
				t.Fatalf("error %v", msg)
			}
		} else {
			lines := sameLines(t, res)
			for _, l := range lines {
				if l.Channel != 0 || l.Kind != Data && l.Kind != Bad {
					t.Fatalf("line %s", full(l))
				}
				if l.Kind == Data && !json.Valid(l.Text) {
					t.Fatalf("line %d: invalid JSON %q", l.No, l.Text)
				}
				if len(l.Text) > maxLine && l.Kind == Bad {
					t.Fatalf("line %d: bad text of %d bytes", l.No, len(l.Text))
				}
			}
			if !small && !spaceLine(data) {
				compareCSV(t, data, lines, false)
			}
			return
		}
		if !small && !spaceLine(data) {
			compareCSV(t, data, nil, true)
		}
	})
}

// compareCSV checks lines against what encoding/csv reads in data;
// failed says that fileio failed on the header.
func compareCSV(t *testing.T, data []byte, lines []Line, failed bool) {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, bom)))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		if len(lines) != 0 || failed {
			t.Fatalf("no header: fileio failed %v, %d lines", failed, len(lines))
		}
		return
	}
	headerOK := err == nil
	seen := map[string]bool{}
	for _, h := range header {
		headerOK = headerOK && h != "" && !seen[h] && utf8.ValidString(h)
		seen[h] = true
	}
	if headerOK == failed {
		t.Fatalf("header %q (error %v): fileio failed %v", header, err, failed)
	}
	if failed {
		return
	}
	i := 0
	for ; ; i++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if i >= len(lines) {
			t.Fatalf("csv reads more rows than the %d of fileio: %q %v", len(lines), rec, err)
		}
		l := lines[i]
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			if l.No != int64(perr.StartLine) || l.Kind != Bad || l.Reason != "csv_malformed" && l.Reason != "utf8_invalid" {
				t.Fatalf("csv error %v, fileio %s", err, full(l))
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		start, _ := r.FieldPos(0)
		if l.No != int64(start) {
			t.Fatalf("row %q at line %d, fileio %s", rec, start, full(l))
		}
		valid := true
		for _, f := range rec {
			valid = valid && utf8.ValidString(f)
		}
		switch {
		case !valid:
			if l.Kind != Bad || l.Reason != "utf8_invalid" {
				t.Fatalf("row %q, fileio %s", rec, full(l))
			}
		case len(rec) != len(header):
			if l.Kind != Bad || l.Reason != "csv_malformed" || l.Detail != "row has "+strconv.Itoa(len(rec))+" fields, header has "+strconv.Itoa(len(header)) {
				t.Fatalf("row %q, fileio %s", rec, full(l))
			}
		default:
			if l.Kind != Data {
				t.Fatalf("row %q, fileio %s", rec, full(l))
			}
			checkObject(t, l, header, rec)
		}
	}
	if i != len(lines) {
		t.Fatalf("csv reads %d rows, fileio %d", i, len(lines))
	}
}

// checkObject checks that l's Text is the JSON object of rec.
func checkObject(t *testing.T, l Line, header, rec []string) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(l.Text))
	d.UseNumber()
	tok := func() json.Token {
		tk, err := d.Token()
		if err != nil {
			t.Fatalf("line %d: %q: %v", l.No, l.Text, err)
		}
		return tk
	}
	if tok() != json.Delim('{') {
		t.Fatalf("line %d: %q", l.No, l.Text)
	}
	for i, h := range header {
		if k := tok(); k != h {
			t.Fatalf("line %d: key %q, want %q in %q", l.No, k, h, l.Text)
		}
		v := tok()
		if s, ok := v.(string); ok {
			// encoding/csv drops the "\r" of a line break inside a
			// quoted field; fileio keeps it (RFC 4180).
			v = strings.ReplaceAll(s, "\r\n", "\n")
		}
		f := rec[i]
		_, ferr := strconv.ParseFloat(f, 64)
		var want json.Token = f
		switch {
		case f == "":
			want = nil
		case ferr == nil && json.Valid([]byte(f)):
			want = json.Number(f)
		}
		if v != want {
			t.Fatalf("line %d: field %q: %#v, want %#v", l.No, h, v, want)
		}
	}
	if tok() != json.Delim('}') || d.More() {
		t.Fatalf("line %d: %q", l.No, l.Text)
	}
}
