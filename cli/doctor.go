package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/spec"
)

// Exit codes of weir doctor: healthy, findings of warning severity or
// above, cannot read the job.
const (
	doctorHealthy  = 0
	doctorFindings = 1
	doctorNoJob    = 2
)

// doctorCmd reads a running job's admin endpoint (weir run --http) or a
// saved dump and prints the diagnosis: where the job stands (data arrives
// slowly or processing is slow), then the findings by severity, each with
// the evidence, where, and the spec field to change.
func doctorCmd(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	addr := fs.String("addr", "", "the job's admin address (weir run --http), such as 127.0.0.1:8080")
	from := fs.String("from", "", "a saved dump (JSON from /api/v1/dump or --save) instead of a running job")
	save := fs.String("save", "", "also save the dump read from --addr to this file (for a bug report)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	specPath := fs.String("spec", "", "a job spec whose doctor: block overrides the thresholds")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, "usage: weir doctor --addr HOST:PORT | --from DUMP.json [--json] [--save DUMP.json] [--spec JOB.yaml]")
		fmt.Fprintln(o.Stderr, "exit status: 0 healthy, 1 findings of warning severity or above, 2 the job could not be read")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if (*addr == "") == (*from == "") || fs.NArg() > 0 {
		fs.Usage()
		return ExitUsage
	}
	var body []byte
	var err error
	if *from != "" {
		body, err = os.ReadFile(o.path(*from))
	} else {
		body, err = fetchDump(ctx, *addr)
		if err == nil && *save != "" {
			err = os.WriteFile(o.path(*save), body, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir doctor:", err)
		return doctorNoJob
	}
	var d doctor.Dump
	if err := json.Unmarshal(body, &d); err != nil {
		fmt.Fprintln(o.Stderr, "weir doctor: not a dump of /api/v1/dump:", err)
		return doctorNoJob
	}
	if d.Group == nil && d.Snapshot.Job.Name == "" {
		// JSON, but no job's: a dump names its job (or its group).
		fmt.Fprintln(o.Stderr, "weir doctor: not a dump of /api/v1/dump: it names no job (save one with weir doctor --addr HOST:PORT --save DUMP.json)")
		return doctorNoJob
	}
	var th doctor.Thresholds
	if *specPath != "" {
		p, ok := loadSpec(*specPath, o)
		if !ok {
			return ExitUsage
		}
		th = doctorThresholds(p)
	}
	r := doctor.Diagnose(d, th)
	if *asJSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		if d.Group != nil {
			fmt.Fprintf(o.Stdout, "weir doctor: job %s, group %s (as member %s sees it)\n", d.Group.Job, d.Group.Group, d.Group.Instance)
		} else {
			fmt.Fprintf(o.Stdout, "weir doctor: job %s\n", d.Snapshot.Job.Name)
		}
		io.WriteString(o.Stdout, r.Text())
	}
	if r.Worst() >= doctor.Warning {
		return doctorFindings
	}
	return doctorHealthy
}

// dumpTimeout is how long weir doctor --addr waits for the job's answer.
var dumpTimeout = 10 * time.Second

func fetchDump(ctx context.Context, addr string) ([]byte, error) {
	url := addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	url = strings.TrimSuffix(url, "/") + "/api/v1/dump"
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, dumpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// A job's HTTP server answers from what the engine published, without
	// waiting on it: a job that accepts the connection and does not answer
	// is not running at all.
	unanswered := func(err error) error {
		if ctx.Err() != nil && parent.Err() == nil {
			return fmt.Errorf("the job at %s took the connection but did not answer within %v: its process is not running (stopped by SIGSTOP or a debugger: `ps -o stat= -p PID` shows T; or starved of CPU or memory); a running job answers at once, even when its sinks or checkpoints are stuck: %w", addr, dumpTimeout, err)
		}
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if e := unanswered(err); e != err {
			return nil, e
		}
		return nil, fmt.Errorf("%w (is the job running with --http %s?)", err, addr)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, unanswered(err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// doctorThresholds are the spec's doctor: block in the doctor's terms.
func doctorThresholds(p *spec.Plan) doctor.Thresholds {
	d := p.Doctor
	if d == nil {
		return doctor.Thresholds{}
	}
	sec := func(v *spec.Duration) float64 {
		if v == nil {
			return 0
		}
		return float64(*v) / 1000
	}
	return doctor.Thresholds{LagHighS: sec(d.LagHigh), LateRise: d.LateRise, LateMinShare: d.LateMinShare, BusyHigh: d.BusyHigh,
		SkewHigh: d.SkewHigh, FutureS: sec(d.Future), HoldS: sec(d.Hold), NoWatermarkS: sec(d.NoWatermark), IdleFlips: d.IdleFlips, CheckpointDelayS: sec(d.CheckpointDelay)}
}
