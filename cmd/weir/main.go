// Command weir runs weir jobs. It only wires the process to package cli:
// the first Ctrl-C, SIGTERM (systemd, Docker, Kubernetes, timeout) or
// SIGHUP (a closed terminal; not under nohup) asks the running job to
// stop gracefully, a second one of any kills the process.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/weirstream/weir/cli"
)

func main() {
	// A reader of a job's stdout that went away (weir run ... | head -1)
	// makes a write fail with EPIPE, which the job reports, instead of
	// killing the process silently before its file sinks are flushed.
	// Other commands die of it at once, as Unix tools do (weir ledger ls
	// | head).
	if len(os.Args) > 1 && os.Args[1] == "run" {
		signal.Ignore(syscall.SIGPIPE)
	}
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	// A closed terminal or SSH session (SIGHUP) stops the job gracefully
	// too, unless the process was started to survive it (nohup).
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	// A signal the process was started with ignored (a background job of
	// a shell script ignores SIGINT) is handled all the same: weir stops
	// on it as the user asks. But restoring its default after the first
	// one would give it back its ignoring, and the second one, which the
	// stop message promises aborts, would do nothing: weir exits on it
	// itself, with the shell's code for a death by that signal.
	var ignored []os.Signal
	for _, s := range sigs {
		if signal.Ignored(s) {
			ignored = append(ignored, s)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	go func() {
		<-ctx.Done()
		if len(ignored) > 0 {
			again := make(chan os.Signal, 1)
			signal.Notify(again, ignored...)
			go func() {
				s := <-again
				os.Exit(128 + int(s.(syscall.Signal)))
			}()
		}
		stop() // restore the defaults: the next Ctrl-C or SIGTERM kills the process
	}()
	fi, err := os.Stderr.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	os.Exit(cli.Main(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: terminal, Getenv: os.Getenv}))
}
