// Package admin serves a running job's read-only admin endpoints on one
// HTTP server: /metrics (Prometheus text or OpenMetrics), /healthz, and,
// with a monitor, the dashboard at / and its API: /api/v1/snapshot,
// /api/v1/history, /api/v1/events (server-sent events: the history
// first, then a point and a snapshot each second), /api/v1/dump (what
// weir doctor reads) and /api/v1/doctor (its report).
//
// Nothing it serves waits for the job: /metrics and the snapshot read
// what the engine and the sinks publish, and what has been stuck for the
// monitor's StuckAfter (a checkpoint, a sink call) is reported in the
// snapshot and makes /healthz answer 503 with the reason.
package admin

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
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

// scrapeTimeout bounds a /metrics answer: past it, it is a 503.
const scrapeTimeout = 10 * time.Second

// Server is a running admin server; Close stops it.
type Server struct {
	srv     *http.Server
	ln      net.Listener
	done    chan error
	closing chan struct{} // closed by Close: event streams end
}

// Start listens on addr and serves the endpoints until Close; mon may be
// nil (no /api). What mon reports stuck makes /healthz answer 503. An address without a host (":8080") listens on loopback
// only: the admin server is meant for the machine the job runs on, and
// exposing it is a choice the caller makes by naming a host.
func Start(addr string, g prometheus.Gatherer, mon *monitor.Monitor, th doctor.Thresholds) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("admin address %q: %w (use host:port, such as 127.0.0.1:8080)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("admin server: %w", err)
	}
	s := &Server{ln: ln, done: make(chan error, 1), closing: make(chan struct{})}
	mux := http.NewServeMux()
	// A scrape gathers once however many wait for it (CoalesceGather),
	// answers 503 past scrapeTimeout rather than hang, and serves what
	// it gathered when a collector fails.
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true, CoalesceGather: true,
		Timeout: scrapeTimeout, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if mon != nil {
			if stuck := mon.Stuck(); len(stuck) > 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				for _, st := range stuck {
					fmt.Fprintln(w, st.Why)
				}
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	if mon != nil {
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
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
	points, unsubscribe := mon.Subscribe()
	defer unsubscribe()
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
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
