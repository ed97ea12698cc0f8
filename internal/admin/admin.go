// Package admin serves a running job's read-only admin endpoints on one
// HTTP server: /metrics (Prometheus text or OpenMetrics), /healthz, and,
// with a monitor, the dashboard at / and its API: /api/v1/snapshot,
// /api/v1/history, /api/v1/events (server-sent events: the history
// first, then a point and a snapshot each second), /api/v1/dump (what
// weir doctor reads) and /api/v1/doctor (its report).
//
// The server cannot take the job down: it holds at most Options.MaxConns
// connections (well under the process's open-file limit, so a flood of
// idle connections leaves the job the descriptors its checkpoints and
// sinks need), every connection has read, write and idle timeouts, and
// a scrape that cannot gather in time answers 503 instead of hanging.
// Nothing it serves waits for the job: /metrics and the snapshot read
// what the engine and the sinks publish, and what has been stuck for the
// monitor's StuckAfter (a checkpoint, a sink call) is reported in the
// snapshot and makes /healthz answer 503 with the reason.
//
// Its own series (on Options.Registerer):
//
//	admin_connections_refused_total   connections answered 503 at the limit (every open one busy)
//	admin_connections_evicted_total   idle connections closed to make room at the limit
//	admin_connections                 connections open
//	admin_connections_max             the limit (Options.MaxConns)
package admin

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/monitor"
)

// static is the dashboard: a page, its script and style, and uPlot
// (vendored from npm, see static/vendor/README.md).
//
//go:embed static
var static embed.FS

// Server is a running admin server; Close stops it.
type Server struct {
	srv     *http.Server
	ln      *limitListener
	o       Options
	done    chan error
	closing chan struct{} // closed by Close: event streams end
}

// Options configures the admin server. A zero duration or count takes
// the default its field names.
type Options struct {
	// Addr is host:port. An address without a host (":8080") listens on
	// loopback only: the admin server is meant for the machine the job
	// runs on, and exposing it is a choice the caller makes by naming a
	// host (Start warns then: the server has no authentication).
	Addr string
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// Registerer, when set, receives the server's own series
	// (weir_admin_*, see the package doc).
	Registerer prometheus.Registerer
	// Monitor, when set, serves the dashboard and /api, and what it
	// reports stuck makes /healthz answer 503.
	Monitor    *monitor.Monitor
	Thresholds doctor.Thresholds
	// Group, set for a group's member (weir run --instance) instead of
	// Monitor, reads the group's status: the page at /, /api/v1/snapshot
	// (the status), /api/v1/dump and /api/v1/doctor serve it.
	Group func(context.Context) *monitor.GroupStatus
	// GroupHealth, set with Group, says why the member is stalled (nil:
	// it is not): /healthz answers 503 with the reasons.
	GroupHealth func() []string
	// Logger is told when the server listens beyond loopback (default:
	// discard).
	Logger *slog.Logger
	// ReadHeaderTimeout (default 5s) and ReadTimeout (default 10s)
	// bound reading a request's header and the whole request.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout bounds writing a response (default 30s); the event
	// stream renews it before each event.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle between requests
	// for this long (default 30s).
	IdleTimeout time.Duration
	// MaxConns bounds the open connections (default 128, and at most a
	// quarter of the process's limit on open files). At the limit a new
	// connection closes the longest-idle one, or, when every one is
	// busy, is answered 503 and closed: connections never queue.
	MaxConns int
	// IdleGrace is how long a connection may go without sending a
	// request before it counts as idle at MaxConns (default 1s).
	IdleGrace time.Duration
	// ScrapeTimeout bounds a /metrics answer: past it, it is a 503
	// (default 10s).
	ScrapeTimeout time.Duration
}

// DefaultMaxConns is Options.MaxConns when the open-file limit allows it.
const DefaultMaxConns = 128

// defaultMaxConns is the default Options.MaxConns under an open-file
// limit (0: unknown): DefaultMaxConns, or a quarter of a limit too low
// for it (at least 1).
func defaultMaxConns(limit uint64) int {
	if limit > 0 && limit/4 < DefaultMaxConns {
		return max(int(limit/4), 1)
	}
	return DefaultMaxConns
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 5*time.Second)
	def(&o.ReadTimeout, 10*time.Second)
	def(&o.WriteTimeout, 30*time.Second)
	def(&o.IdleTimeout, 30*time.Second)
	def(&o.IdleGrace, time.Second)
	def(&o.ScrapeTimeout, 10*time.Second)
	if o.MaxConns <= 0 {
		o.MaxConns = defaultMaxConns(fdLimit())
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

var (
	refusedDesc = prometheus.NewDesc("weir_admin_connections_refused_total",
		"Connections to the admin server answered 503 and closed at once: the server had its most connections open, all of them busy.", nil, nil)
	evictedDesc = prometheus.NewDesc("weir_admin_connections_evicted_total",
		"Idle connections the admin server closed to make room for a new one at its most connections.", nil, nil)
	openDesc = prometheus.NewDesc("weir_admin_connections",
		"Connections the admin server holds open.", nil, nil)
	maxDesc = prometheus.NewDesc("weir_admin_connections_max",
		"The most connections the admin server holds open (Options.MaxConns).", nil, nil)
)

// connCollector exports the listener's counts.
type connCollector struct {
	l                *limitListener
	max              int
	refused, evicted *atomic.Int64
}

func (c connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- refusedDesc
	ch <- evictedDesc
	ch <- openDesc
	ch <- maxDesc
}

func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(c.refused.Load()))
	ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(c.evicted.Load()))
	ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(c.l.open()))
	ch <- prometheus.MustNewConstMetric(maxDesc, prometheus.GaugeValue, float64(c.max))
}

// Start listens on o.Addr and serves the endpoints until Close.
func Start(o Options) (*Server, error) {
	o = o.withDefaults()
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("admin address %q: %w (use host:port, such as 127.0.0.1:8080)", o.Addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	raw, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("admin server: %w", err)
	}
	var refused, evicted atomic.Int64
	ln := newLimitListener(raw, o.MaxConns, o.IdleGrace, func() { refused.Add(1) }, func() { evicted.Add(1) })
	if o.Registerer != nil {
		if err := o.Registerer.Register(connCollector{l: ln, max: o.MaxConns, refused: &refused, evicted: &evicted}); err != nil {
			raw.Close()
			return nil, fmt.Errorf("admin server: %w", err)
		}
	}
	if a, ok := raw.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		// Named as given (0.0.0.0 listens as [::]), with the port chosen.
		at := net.JoinHostPort(host, strconv.Itoa(a.Port))
		o.Logger.Warn(fmt.Sprintf("the admin server listens on %s, not a loopback address, and it is unauthenticated: anyone who can reach that address can read the job's metrics, dashboard and API", at),
			"addr", at)
	}
	s := &Server{ln: ln, o: o, done: make(chan error, 1), closing: make(chan struct{})}
	mon := o.Monitor
	mux := http.NewServeMux()
	// A scrape gathers once however many wait for it (CoalesceGather),
	// answers 503 past ScrapeTimeout rather than hang, and serves what
	// it gathered when a collector fails (at the open-file limit the
	// process collector cannot read /proc).
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{EnableOpenMetrics: true, CoalesceGather: true,
		Timeout: o.ScrapeTimeout, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		var why []string
		if mon != nil {
			for _, st := range mon.Stuck() {
				why = append(why, st.Why)
			}
		}
		if o.GroupHealth != nil {
			why = append(why, o.GroupHealth()...)
		}
		if len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, s := range why {
				fmt.Fprintln(w, s)
			}
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if mon != nil {
		th := o.Thresholds
		mux.HandleFunc("GET /api/v1/snapshot", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, mon.Snapshot()) })
		mux.HandleFunc("GET /api/v1/history", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, mon.History()) })
		dump := func() (doctor.Dump, bool) {
			s := mon.Snapshot()
			if s == nil {
				return doctor.Dump{}, false
			}
			return doctor.Dump{Snapshot: *s, History: mon.History(), Thresholds: th}, true
		}
		mux.HandleFunc("GET /api/v1/dump", func(w http.ResponseWriter, _ *http.Request) {
			if d, ok := dump(); ok {
				writeJSON(w, d)
				return
			}
			http.Error(w, "the job has not started yet", http.StatusServiceUnavailable)
		})
		mux.HandleFunc("GET /api/v1/doctor", func(w http.ResponseWriter, _ *http.Request) {
			if d, ok := dump(); ok {
				writeJSON(w, doctor.Diagnose(d, doctor.Thresholds{}))
				return
			}
			http.Error(w, "the job has not started yet", http.StatusServiceUnavailable)
		})
		mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) { s.events(w, r, mon) })
		page, _ := fs.Sub(static, "static")
		mux.Handle("GET /", http.FileServerFS(page))
	}
	if g := o.Group; g != nil {
		th := o.Thresholds
		status := func(r *http.Request) *monitor.GroupStatus {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			return g(ctx)
		}
		mux.HandleFunc("GET /api/v1/snapshot", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, status(r)) })
		mux.HandleFunc("GET /api/v1/dump", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, doctor.Dump{Group: status(r), Thresholds: th})
		})
		mux.HandleFunc("GET /api/v1/doctor", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, doctor.Diagnose(doctor.Dump{Group: status(r)}, th))
		})
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { groupPage(w, status(r)) })
	}
	// The server's own complaints (accept retries, clients' malformed
	// requests) are about clients: debug level, never the job's stderr.
	s.srv = &http.Server{Handler: mux, ConnState: ln.track,
		ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout,
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// events streams the history, then each new point with the snapshot,
// until the client leaves or the server closes.
func (s *Server) events(w http.ResponseWriter, r *http.Request, mon *monitor.Monitor) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// The stream outlives WriteTimeout: it renews its write deadline
	// before each event, so only a client that stops reading is dropped
	// after WriteTimeout (ReadTimeout does not end it either; see
	// TestEventsOutliveTimeouts).
	rc := http.NewResponseController(w)
	points, unsubscribe := mon.Subscribe()
	defer unsubscribe()
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		rc.SetWriteDeadline(time.Now().Add(s.o.WriteTimeout))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return true
	}
	if !send("history", mon.History()) || !send("snapshot", mon.Snapshot()) {
		return
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case p := <-points:
			if !send("point", p) || !send("snapshot", mon.Snapshot()) {
				return
			}
			fl.Flush()
		}
	}
}

// Addr is the address the server listens on (with the port chosen when
// the address said port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close ends the event streams and stops the server, waiting up to 5
// seconds for requests in flight (a scrape). It is not safe to call
// twice.
func (s *Server) Close() error {
	close(s.closing)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
