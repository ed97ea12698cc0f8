package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// zoneOffset matches an offset written as +08:00, -0530, +8, UTC+8 or
// GMT+08:00.
var zoneOffset = regexp.MustCompile(`^(?i:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$`)

// ParseZone reads a time zone (an IANA name such as Asia/Shanghai, UTC,
// or an offset such as +08:00, UTC+8 or GMT+05:30) as its offset from
// UTC. A zone whose offset changes over the year (daylight saving) is
// refused: windows cut by its wall clock would not be an offset of UTC's.
func ParseZone(name string) (etime.Duration, error) {
	if m := zoneOffset.FindStringSubmatch(strings.TrimSpace(name)); m != nil {
		h, _ := strconv.Atoi(m[2])
		mins := 0
		if m[3] != "" {
			mins, _ = strconv.Atoi(m[3])
		}
		if h > 14 || h == 14 && mins > 0 || mins > 59 {
			return 0, fmt.Errorf("%q is no offset from UTC (at most 14 hours)", name)
		}
		off := etime.Duration((h*60 + mins) * 60_000)
		if m[1] == "-" {
			off = -off
		}
		return off, nil
	}
	switch strings.ToUpper(name) {
	case "UTC", "Z", "GMT", "ETC/UTC", "ETC/GMT":
		return 0, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || name == "Local" {
		return 0, fmt.Errorf("%q is no time zone weir knows: use an IANA name such as Asia/Shanghai, or an offset such as +08:00", name)
	}
	// One offset all year: the zone's offset at the start of each month
	// from 2000 to the year after next (Asia/Shanghai's summer time of
	// 1986-1991 is before; times before 2000 take the offset since).
	months := (time.Now().Year()+2-2000)*12 + 12
	var first int
	for i := range months {
		_, off := time.Date(2000+i/12, time.Month(i%12+1), 1, 12, 0, 0, 0, loc).Zone()
		if i == 0 {
			first = off
		} else if off != first {
			return 0, fmt.Errorf("%s changes its offset over the year (daylight saving) or changed it since 2000, which windows cut by one offset of UTC cannot follow", name)
		}
	}
	return etime.Duration(first) * 1000, nil
}

// ShownBounds are window w's start and end as the job's rows show them
// in text and expressions: its time zone's wall time (epoch
// milliseconds of that wall time, as a SQL TIMESTAMP holds it); the
// global window's infinite bounds stay as they are.
func (p *Plan) ShownBounds(w window.Window) (start, end etime.Time) {
	if p.Zone == 0 || w == window.Global {
		return w.Start, w.End
	}
	return w.Start.Add(p.Zone), w.End.Add(p.Zone)
}

// BoundValues are window w's bounds as a result expression reads them
// (window_start, window_end, window_time): the start and end as
// ShownBounds gives them; window_time, the window's last millisecond,
// as the zone's wall time too in a YAML job's expressions (which read
// every time in UTC), and as the instant in a SQL job's, where it is a
// TIMESTAMP_LTZ that the compiler reads as a wall time where SQL does.
// nil for the global window.
func (p *Plan) BoundValues(w window.Window) []etime.Time {
	if w == window.Global {
		return nil
	}
	s, e := p.ShownBounds(w)
	wt := w.MaxTimestamp()
	if !p.SQL {
		wt = wt.Add(p.Zone)
	}
	return []etime.Time{s, e, wt}
}
