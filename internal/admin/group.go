package admin

import (
	"html/template"
	"net/http"
	"time"

	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/monitor"
)

// groupTmpl is the page of a group's member: the whole group as the
// member reads it from Kafka, refreshed every 2 seconds, and the doctor's
// findings.
var groupTmpl = template.Must(template.New("group").Funcs(template.FuncMap{
	"wm": func(t monitor.GroupTask) string {
		if t.WatermarkMS == nil {
			return "— (" + t.WatermarkWhy + ")"
		}
		return time.UnixMilli(*t.WatermarkMS).UTC().Format("2006-01-02 15:04:05.000")
	},
	"owner": func(o string) string {
		if o == "" {
			return "— (none)"
		}
		return o
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>weir group {{.S.Group}}</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}.crit{color:#b00}.warn{color:#a60}</style>
</head><body>
<h1>job {{.S.Job}}: group {{.S.Group}}</h1>
<p>as member <b>{{.S.Instance}}</b> reads it at {{.S.At.Format "15:04:05"}} (run {{.S.Run}}, spec {{.S.SpecHash}}); input {{.S.Topic}} with {{.S.InputPartitions}} partitions, the group's state {{.S.StatePartitions}}.
{{with .S.Holder}}Task {{.Task}} ({{owner .Owner}}) holds the group's watermark at {{wm .}}.{{end}}
This member committed {{.S.Committed}} transactions and aborted {{.S.Aborted}}.</p>
<h2>doctor: {{.R.Quadrant}}</h2>
<ul>{{range .R.Findings}}<li class="{{if eq .Severity.String "critical"}}crit{{else}}warn{{end}}">{{.Rule}} {{.Severity}} {{.Where}}: {{.Title}} ({{.Evidence}}). Fix: {{.Fix}}</li>{{else}}<li>no findings</li>{{end}}</ul>
<h2>members</h2>
<table><tr><th>instance</th><th>host</th><th>tasks</th></tr>
{{range .S.Members}}<tr><td>{{.Instance}}</td><td>{{.Host}}</td><td>{{.Tasks}}</td></tr>{{else}}<tr><td colspan="3">none</td></tr>{{end}}</table>
<h2>tasks</h2>
<table><tr><th>task</th><th>owner</th><th>watermark</th><th>committed offset</th><th>end offset</th><th>lag</th><th>checkpoint</th><th>done</th></tr>
{{range .S.Tasks}}<tr><td>{{.Task}}</td><td>{{owner .Owner}}</td><td>{{wm .}}</td><td>{{.Committed}}</td><td>{{.End}}</td><td>{{.Lag}}</td><td>{{.Checkpoint}}</td><td>{{.Done}}</td></tr>{{end}}</table>
<h2>restores on this member</h2>
<table><tr><th>task</th><th>from</th><th>started</th><th>seconds</th><th>records</th><th>bytes</th></tr>
{{range .S.Restores}}<tr><td>{{.Task}}</td><td>{{if .InProgress}}in progress, {{.Remaining}} changelog records left{{else}}{{.From}}{{end}}</td><td>{{.Started.Format "15:04:05.000"}}</td><td>{{printf "%.3f" .Seconds}}</td><td>{{.Records}}</td><td>{{.Bytes}}</td></tr>{{else}}<tr><td colspan="6">none</td></tr>{{end}}</table>
{{with .S.Errors}}<h2>not read</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>JSON: <a href="/api/v1/snapshot">/api/v1/snapshot</a>, <a href="/api/v1/doctor">/api/v1/doctor</a>; metrics: <a href="/metrics">/metrics</a></p>
</body></html>
`))

// groupPage writes the group page of status s.
func groupPage(w http.ResponseWriter, s *monitor.GroupStatus) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = groupTmpl.Execute(w, struct {
		S *monitor.GroupStatus
		R doctor.Report
	}{s, doctor.Diagnose(doctor.Dump{Group: s}, doctor.Thresholds{})})
}
